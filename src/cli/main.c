/* vulpes: the command-line tool. Turns library statuses into messages and exit codes. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli/commands.h"
#include "vulpes/api.h"
#include "vulpes/run.h"

/* Every command and subcommand, one line each: `vulpes --help` prints this table, `vulpes
 * bench --help` its bench rows, and `vulpes bench WHAT` runs the row's benchmark. */
static const vp_cli_command COMMANDS[] = {
    {"train", NULL, "CONFIG [key=value ...]", "train, validate, keep the best checkpoint, backtest the test span",
     vp_cmd_train, NULL},
    {"walkforward", NULL, "CONFIG [key=value ...]", "roll train/val/test folds through time, stitch the test spans",
     vp_cmd_walkforward, NULL},
    {"ablate", NULL, "CONFIG --switch KEY,... --seeds N", "train the base and each switch on over N seeds: one table",
     vp_cmd_ablate, NULL},
    {"search", NULL, "CONFIG SPACE.yaml --trials N", "random search with successive halving on validation: one table",
     vp_cmd_search, NULL},
    {"backtest", NULL, "--checkpoint CK [...]", "a trained agent over bars it has not seen: trades, equity, report",
     vp_cmd_backtest, NULL},
    {"act", NULL, "--checkpoint CK [--data FILE]", "the agent's decision for the bar after the last one, as JSON",
     vp_cmd_act, NULL},
    {"record", NULL, "CONFIG --policy NAME --out FILE", "a behaviour's transitions in the env as an offline dataset",
     vp_cmd_record, NULL},
    {"compare", NULL, "RUN... [--out DIR]", "one table (and page) of the figures of several runs or backtests",
     vp_cmd_compare, NULL},
    {"data", "inspect", "FILE", "what the loader sees in a bar file: rows, span, gaps, bad rows, features",
     vp_cmd_data, NULL},
    {"data", "synth", "KIND --bars N --out FILE", "a synthetic market (gbm, regime, ou, trend) written as CSV",
     vp_cmd_data, NULL},
    {"config", NULL, "--defaults | CONFIG", "every key with its default and doc, or a config checked and resolved",
     vp_cmd_config, NULL},
    {"bench", "gemm", "", "the learner's GEMM shapes at batch 8192: ms and TFLOP/s", vp_cmd_bench, vp_bench_gemm},
    {"bench", "env", "", "env steps/s with random actions (4096 and 65536 envs on CUDA): bytes/step, GB/s",
     vp_cmd_bench, vp_bench_env},
    {"bench", "step", "", "ms per learner step (default model, B = 8192): phases and TFLOP/s", vp_cmd_bench,
     vp_bench_step},
    {"bench", "backtest", "", "bars/s of the exact backtest and the segments (1M bars on CUDA): encode vs steps",
     vp_cmd_bench, vp_bench_backtest},
    {"bench", "train", "", "collection env steps/s with policy inference; iterations/s, collect/learn split",
     vp_cmd_bench, vp_bench_train},
    {"bench", "ppo", "", "PPO: collection env steps/s, ms per minibatch update, iterations with their split",
     vp_cmd_bench, vp_bench_ppo},
    {"bench", "iql", "", "IQL: ms per update at B = 8192 (both encodings, every head, AdamW, Polyak), FLOP floor",
     vp_cmd_bench, vp_bench_iql},
    {"bench", "act", "", "us per live decision on one CPU core (default model): median, p99, FLOPs", vp_cmd_bench,
     vp_bench_act},
    {"bench", "attn", "", "attention forward and forward+backward on the models' shapes: ms, TFLOP/s, GB/s",
     vp_cmd_bench, vp_bench_attn},
    {"bench", "dt", "", "Decision Transformer: ms per update at B = 8192 sequences, tokens/s, FLOP floor",
     vp_cmd_bench, vp_bench_dt},
};
#define N_COMMANDS ((int)(sizeof COMMANDS / sizeof COMMANDS[0]))

const vp_cli_command* vp_cli_commands(int* n) {
    *n = N_COMMANDS;
    return COMMANDS;
}

void vp_cli_print_commands(FILE* f, const char* name) {
    char head[96];
    for (int i = 0; i < N_COMMANDS; ++i) {
        const vp_cli_command* c = &COMMANDS[i];
        if (name && strcmp(c->name, name) != 0) continue;
        snprintf(head, sizeof head, "%s%s%s%s%s", c->name, c->sub ? " " : "", c->sub ? c->sub : "", c->args[0] ? " " : "",
                 c->args);
        fprintf(f, "  %-40s %s\n", head, c->help);
    }
}

static void usage(FILE* f) {
    fprintf(f, "vulpes %s: deep RL trading agents on one GPU\n\nusage: vulpes COMMAND [ARGS]\n\ncommands:\n",
            VP_VERSION_STRING);
    vp_cli_print_commands(f, NULL);
    fprintf(f,
            "\nevery command that computes (train, walkforward, ablate, search, backtest, bench) takes\n"
            "  --backend cpu|cuda|auto                  where it runs (default: the config's run.backend; auto: the\n"
            "                                           GPU when one is usable)\n"
            "and train, walkforward, ablate, search and config take key=value config overrides (backtest: instrument.* only).\n\n"
            "  vulpes COMMAND --help                    the options of one command\n"
            "  vulpes --version                         the version\n");
}

vp_backend* vp_cli_backend(const char* choice) {
    vp_backend* b = NULL;
    vp_status s;
    if (!choice || strcmp(choice, "auto") == 0) {
        s = vp_backend_best_init(&b);
    } else if (strcmp(choice, "cpu") == 0) {
        s = vp_backend_cpu_init(&b);
    } else if (strcmp(choice, "cuda") == 0 || strcmp(choice, "gpu") == 0) {
        s = vp_backend_cuda_init(&b, 0);
    } else {
        fprintf(stderr, "vulpes: unknown backend '%s' (choose cpu, cuda or auto)\n", choice);
        return NULL;
    }
    if (s != VP_OK) {
        vp_cli_fail("creating the backend");
        return NULL;
    }
    return b;
}

volatile sig_atomic_t vp_cli_stop = 0;

static void on_stop_signal(int sig) {
    vp_cli_stop = sig;
}

void vp_cli_trap_signals(void) {
    // each signal's handler resets itself, so a second one of a kind ends the process
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) sigaction(sigs[i], &sa, NULL);
}

const char* vp_cli_stop_name(void) {
    switch (vp_cli_stop) {
    case SIGINT: return "Ctrl-C (SIGINT)";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a stop request";
    }
}

int vp_cli_stop_status(void) {
    return vp_cli_stop > 0 ? 128 + (int)vp_cli_stop : 130;
}

vp_backend* vp_cli_backend_for(const vp_config* cfg) {
    static const char* backends[VP_RUN_BACKEND_COUNT] = {"auto", "cpu", "cuda"};
    return vp_cli_backend(backends[cfg->run.backend]);
}

vp_status vp_cli_job_dir(char* dir, size_t n, const char* resume, const char* out, const char* kind,
                         const char* cfg_path) {
    if (resume || out) {
        snprintf(dir, n, "%s", resume ? resume : out);
        return VP_OK;
    }
    char name[300], base[256];
    snprintf(name, sizeof name, "%s-%s", kind, vp_run_name_from_path(cfg_path, base, sizeof base));
    return vp_run_dir_default(dir, n, "runs", name, time(NULL));
}

const char* vp_cli_error(void) {
    return vp_api_last_error();
}

int vp_cli_fail(const char* what) {
    fprintf(stderr, "vulpes: error %s: %s\n", what, vp_cli_error());
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("vulpes %s\n", VP_VERSION_STRING);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; ++i)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vulpes: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
