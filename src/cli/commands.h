/* The CLI's subcommands. Each returns a process exit code (0 ok, 1 failure, 2 usage). */
#ifndef VP_CLI_COMMANDS_H
#define VP_CLI_COMMANDS_H

#include <signal.h>

#include "vulpes/vulpes.h"

/* `vulpes bench WHAT [options]`. */
int vp_cmd_bench(int argc, char** argv);

/* `vulpes data inspect FILE [options]`. */
int vp_cmd_data(int argc, char** argv);

/* Parses "--backend cpu|cuda|auto" style choices and creates the backend; prints the error
 * and returns NULL on failure. */
vp_backend* vp_cli_backend(const char* choice);

/* The signal number of the first Ctrl-C (SIGINT), SIGTERM or SIGHUP after
 * vp_cli_trap_signals (0: none); long jobs checkpoint and stop between iterations. */
extern volatile sig_atomic_t vp_cli_stop;

/* Installs the stop handler for SIGINT, SIGTERM and SIGHUP: the first sets vp_cli_stop, a
 * second of the same signal ends the process at once. */
void vp_cli_trap_signals(void);

/* What stopped the job, for messages ("SIGTERM"); "a stop request" when no signal did. */
const char* vp_cli_stop_name(void);

/* The exit status of a stopped job: 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). */
int vp_cli_stop_status(void);

/* Creates the backend a resolved config asks for (run.backend); NULL after printing the
 * error. */
vp_backend* vp_cli_backend_for(const vp_config* cfg);

/* Prints the library's last error to stderr with a prefix, returns exit code 1. */
int vp_cli_fail(const char* what);

/* vp_last_error() without its source location (" (VP_ERR_..., file.c:123)"), which stays
 * when the environment sets VULPES_DEBUG=1; a static buffer. */
const char* vp_cli_error(void);

/* `vulpes config --defaults [--markdown] | CONFIG [key=value ...]`. */
int vp_cmd_config(int argc, char** argv);

/* `vulpes train CONFIG [key=value ...] [--out DIR] [--force] [--resume DIR]`. */
int vp_cmd_train(int argc, char** argv);

/* `vulpes backtest --checkpoint CK [--data FILE] [--from T0] [--to T1] [options]`. */
int vp_cmd_backtest(int argc, char** argv);

/* `vulpes walkforward CONFIG [key=value ...] --train-bars N --val-bars N --test-bars N [options]`. */
int vp_cmd_walkforward(int argc, char** argv);

#endif /* VP_CLI_COMMANDS_H */
