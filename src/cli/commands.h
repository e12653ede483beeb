/* The CLI's subcommands. Each returns a process exit code (0 ok, 1 failure, 2 usage). */
#ifndef VP_CLI_COMMANDS_H
#define VP_CLI_COMMANDS_H

#include <signal.h>
#include <stdio.h>

#include "cli/cli_args.h"
#include "vulpes/vulpes.h"

struct vp_bench_opts;

/* One row of the command table (main.c): a command or one of its subcommands. */
typedef struct vp_cli_command {
    const char* name;                 /* first argument: "data" */
    const char* sub;                  /* second argument: "synth" (NULL: none) */
    const char* args;                 /* the arguments in short ("KIND --bars N --out FILE") */
    const char* help;                 /* what it does, one line */
    int (*run)(int argc, char** argv); /* the command's handler, given argv from the command on */
    int (*bench)(vp_backend* b, const struct vp_bench_opts* o); /* a benchmark's function (bench rows) */
} vp_cli_command;

/* The command table: every command and subcommand, in `vulpes --help` order; *n its rows. */
const vp_cli_command* vp_cli_commands(int* n);

/* Prints the table's rows, one line each (only command `name`'s when not NULL). */
void vp_cli_print_commands(FILE* f, const char* name);

/* `vulpes bench WHAT [options]`. */
int vp_cmd_bench(int argc, char** argv);

/* `vulpes data inspect FILE [options]`. */
int vp_cmd_data(int argc, char** argv);

/* Creates the backend of a --backend choice (cpu, cuda or auto; NULL: auto); prints the error
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

/* The folder of a multi-run job into dir[n]: `resume`, else `out`, else a new
 * runs/YYYYmmdd-HHMMSS-KIND-NAME after the config file's name. VP_OK or the naming error. */
vp_status vp_cli_job_dir(char* dir, size_t n, const char* resume, const char* out, const char* kind,
                         const char* cfg_path);

/* Prints the library's last error to stderr with a prefix, returns exit code 1. */
int vp_cli_fail(const char* what);

/* vp_last_error() without its source location (" (VP_ERR_..., file.c:123)"), which stays
 * when the environment sets VULPES_DEBUG=1: vp_api_last_error (vulpes/api.h). */
const char* vp_cli_error(void);

/* `vulpes config --defaults [--markdown] | CONFIG [key=value ...]`. */
int vp_cmd_config(int argc, char** argv);

/* `vulpes train CONFIG [key=value ...] [--out DIR] [--force] [--resume DIR]`. */
int vp_cmd_train(int argc, char** argv);

/* `vulpes backtest --checkpoint CK [--data FILE] [--from T0] [--to T1] [options]`. */
int vp_cmd_backtest(int argc, char** argv);

/* `vulpes act --checkpoint CK [--data FILE] [--force] [--backend B] [KEY=VALUE ...]`. */
int vp_cmd_act(int argc, char** argv);

/* `vulpes compare RUN... [--out DIR] [--json | --csv]`. */
int vp_cmd_compare(int argc, char** argv);

/* `vulpes walkforward CONFIG [key=value ...] --train-bars N --val-bars N --test-bars N [options]`. */
int vp_cmd_walkforward(int argc, char** argv);

/* `vulpes ablate CONFIG --switch KEY[,KEY...] --seeds N [options]`, or `vulpes ablate --resume DIR`. */
int vp_cmd_ablate(int argc, char** argv);

/* `vulpes search CONFIG SPACE.yaml --trials N [options]`, or `vulpes search --resume DIR`. */
int vp_cmd_search(int argc, char** argv);

/* `vulpes record CONFIG (--policy NAME[:opts] | --checkpoint CK) --out FILE [options]`. */
int vp_cmd_record(int argc, char** argv);

#endif /* VP_CLI_COMMANDS_H */
