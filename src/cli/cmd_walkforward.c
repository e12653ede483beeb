/* `vulpes walkforward CONFIG [key=value ...] [--train-bars N --val-bars N --test-bars N]
 * [--step-bars N] [--embargo-bars N] [--anchored] [--warm-start] [--max-folds N] [--parallel N]
 * [--out DIR] [--force]`, or `vulpes walkforward --resume DIR`: turns the fold flags into
 * walkforward.* overrides, resolves the config, traps Ctrl-C, runs vp_walkforward_run with fold
 * lines on stderr and prints the per-fold table. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "vulpes/walkforward.h"

/* Most key=value overrides on one command line. */
#define MAX_OVERRIDES 256

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes walkforward CONFIG [key=value ...] [--train-bars N] [--val-bars N] [--test-bars N]\n"
            "                          [--step-bars N] [--embargo-bars N] [--anchored] [--warm-start]\n"
            "                          [--max-folds N] [--parallel N] [--out DIR] [--force] [--no-fused]\n"
            "       vulpes walkforward [CONFIG] --resume DIR [--parallel N] [key=value ...]\n\n"
            "Rolls folds [train | val | test] through the bars of data.path: each fold trains from scratch\n"
            "(train.iterations), keeps the parameters with the best validation Sharpe, and runs the exact\n"
            "backtest on its test span; the test spans are stitched into one out-of-sample curve.\n"
            "The fold layout is the config's walkforward section; each flag below is the override of\n"
            "its key (--train-bars N is walkforward.train_bars=N, --anchored walkforward.anchored=true).\n\n"
            "  --train-bars N    bars of a fold's train span         --val-bars N   its validation span\n"
            "  --test-bars N     bars of its test span               --step-bars N  bars between folds (default:\n"
            "                                                                       the test span, so tests tile)\n"
            "  --embargo-bars N  unused bars between the spans (default: split.embargo)\n"
            "  --anchored        every train span starts at the first usable bar and grows\n"
            "  --warm-start      a fold starts from the previous fold's selected parameters\n"
            "  --max-folds N     run only the first N folds\n"
            "  --parallel N      train up to N folds at once, each on its own backend (walkforward.parallel;\n"
            "                    fewer when free GPU memory holds fewer; 1 with --warm-start); same results\n"
            "  --out DIR         the walk-forward folder (default runs/YYYYmmdd-HHMMSS-walkforward-NAME)\n"
            "  --force           start over in a non-empty folder (the earlier walk-forward's files move\n"
            "                    into DIR/replaced-N; nothing is deleted)\n"
            "  --resume DIR      continue an interrupted walk-forward at its first unfinished fold (the\n"
            "                    config and fold settings come from DIR/config.yaml)\n"
            "  --no-fused        on CUDA, backtest through the op path instead of the one-kernel path\n\n"
            "Ctrl-C, SIGTERM or SIGHUP leaves the fold in progress unfinished; --resume DIR runs it again\n"
            "and goes on.\n");
}

/* The flags that set a walkforward.* key: flag, key, whether it takes a value, its least value. */
typedef struct wf_flag {
    const char* flag;
    const char* key;
    int takes_value;
    int64_t min;
    int fold;  /* 1: part of the fold layout (not allowed with --resume) */
} wf_flag;

static const wf_flag FLAGS[] = {
    {"--train-bars", "walkforward.train_bars", 1, 1, 1}, {"--val-bars", "walkforward.val_bars", 1, 1, 1},
    {"--test-bars", "walkforward.test_bars", 1, 1, 1},   {"--step-bars", "walkforward.step_bars", 1, 0, 1},
    {"--embargo-bars", "walkforward.embargo_bars", 1, 0, 1}, {"--max-folds", "walkforward.max_folds", 1, 0, 1},
    {"--anchored", "walkforward.anchored", 0, 0, 1},     {"--warm-start", "walkforward.warm_start", 0, 0, 1},
    {"--parallel", "walkforward.parallel", 1, 1, 0},
};
#define N_FLAGS ((int)(sizeof FLAGS / sizeof FLAGS[0]))

/* Command-line choices. */
typedef struct wf_args {
    const char* config;
    const char* out;
    const char* resume;
    int force, fused, n_over, n_fold_flags;
    char* over[MAX_OVERRIDES + N_FLAGS];       /* key=value, the flags' overrides after the others */
    char flag_kv[N_FLAGS][96];                 /* storage of the flags' overrides */
    int n_flag_kv;
} wf_args;

/* Parses a count flag's value; 0 on a bad value. */
static int count_arg(const char* flag, const char* text, int64_t min) {
    char* end = NULL;
    long long x = strtoll(text, &end, 10);
    if (!end || *end != '\0' || x < min) {
        fprintf(stderr, "vulpes walkforward: %s needs an integer >= %lld, got '%s'\n", flag, (long long)min, text);
        return 0;
    }
    return 1;
}

/* Adds flag f (value `text`, NULL for a switch) as the override of its key; 0 on a bad value. */
static int add_flag(wf_args* a, const wf_flag* f, const char* text) {
    if (text && !count_arg(f->flag, text, f->min)) return 0;
    char* kv = a->flag_kv[a->n_flag_kv++];
    snprintf(kv, sizeof a->flag_kv[0], "%s=%s", f->key, text ? text : "true");
    a->over[a->n_over++] = kv;
    a->n_fold_flags += f->fold;
    return 1;
}

/* Parses argv; returns 0, or the exit code of a usage error / --help (-1: help shown). */
static int parse(int argc, char** argv, wf_args* a) {
    memset(a, 0, sizeof *a);
    a->fused = 1;
    int n_plain = 0;
    char* plain[MAX_OVERRIDES];
    for (int i = 1; i < argc; ++i) {
        const char* s = argv[i];
        const wf_flag* f = NULL;
        for (int c = 0; c < N_FLAGS && !f; ++c)
            if (strcmp(s, FLAGS[c].flag) == 0 && (!FLAGS[c].takes_value || i + 1 < argc)) f = &FLAGS[c];
        if (f) {
            if (a->n_flag_kv == N_FLAGS) {
                fprintf(stderr, "vulpes walkforward: a flag given twice\n");
                return 2;
            }
            if (!add_flag(a, f, f->takes_value ? argv[++i] : NULL)) return 2;
        } else if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(s, "--out") == 0 && i + 1 < argc) {
            a->out = argv[++i];
        } else if (strcmp(s, "--resume") == 0 && i + 1 < argc) {
            a->resume = argv[++i];
        } else if (strcmp(s, "--force") == 0) {
            a->force = 1;
        } else if (strcmp(s, "--no-fused") == 0) {
            a->fused = 0;
        } else if (s[0] != '-' && strchr(s, '=') != NULL && n_plain < MAX_OVERRIDES) {
            plain[n_plain++] = argv[i];
        } else if (s[0] != '-' && !a->config) {
            a->config = s;
        } else {
            fprintf(stderr, "vulpes walkforward: unexpected argument '%s'\n\n", s);
            usage(stderr);
            return 2;
        }
    }
    // key=value overrides first, the flags after them (a flag wins over the same key given as key=value)
    memmove(a->over + n_plain, a->over, sizeof(char*) * (size_t)a->n_over);
    memcpy(a->over, plain, sizeof(char*) * (size_t)n_plain);
    a->n_over += n_plain;
    if (a->resume && (a->out || a->force || a->n_fold_flags)) {
        fprintf(stderr, "vulpes walkforward: --resume continues its folder with its own folds; --out, --force and "
                "the fold flags do not apply\n");
        return 2;
    }
    if (!a->resume && !a->config) {
        fprintf(stderr, "vulpes walkforward: CONFIG is required\n\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

int vp_cmd_walkforward(int argc, char** argv) {
    wf_args a;
    int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;

    // config (the folder's on a resume, which holds its fold settings) with the overrides; the folder
    char cfg_path[1100], dir[1100];
    if (a.config) snprintf(cfg_path, sizeof cfg_path, "%s", a.config);
    else snprintf(cfg_path, sizeof cfg_path, "%.1000s/config.yaml", a.resume);
    vp_config cfg;
    if (vp_config_resolve(&cfg, cfg_path, a.n_over, a.over) != VP_OK) return vp_cli_fail("in the configuration");
    const vp_config_walkforward* w = &cfg.walkforward;
    if (w->train_bars <= 0 || w->val_bars <= 0 || w->test_bars <= 0) {
        fprintf(stderr, "vulpes walkforward: the fold lengths are missing: set walkforward.train_bars, val_bars "
                "and test_bars in %s (or --train-bars, --val-bars, --test-bars)\n", cfg_path);
        return 2;
    }
    if (a.resume) {
        snprintf(dir, sizeof dir, "%s", a.resume);
    } else if (a.out) {
        snprintf(dir, sizeof dir, "%s", a.out);
    } else {
        char name[300], base[256];
        snprintf(name, sizeof name, "walkforward-%s", vp_run_name_from_path(cfg_path, base, sizeof base));
        if (vp_run_dir_default(dir, sizeof dir, "runs", name, time(NULL)) != VP_OK) return vp_cli_fail("naming the folder");
    }
    vp_backend* b = vp_cli_backend_for(&cfg);
    if (!b) return 1;

    // Ctrl-C, SIGTERM, SIGHUP: the fold in progress stops between iterations; a second one
    // ends the process
    vp_cli_trap_signals();

    vp_wf_opts o = {dir, a.resume ? VP_RUN_RESUME : (a.force ? VP_RUN_FORCE : VP_RUN_CREATE), stderr, &vp_cli_stop, 0,
                    a.fused, isatty(fileno(stderr)), 0.0};
    fprintf(stderr, "vulpes walkforward: %s on %s into %s\n", cfg.data.path, vp_backend_name(b), dir);
    vp_wf_result r;
    vp_status s = vp_walkforward_run(&cfg, b, &o, &r);
    vp_backend_free(b);
    if (s != VP_OK) {
        vp_wf_result_free(&r);
        return vp_cli_fail("in the walk-forward");
    }
    if (r.n_done > 0) vp_wf_print(&r, stdout);
    printf("\nwalk-forward folder: %s\n", dir);
    const int interrupted = r.interrupted;
    if (interrupted)
        fprintf(stderr, "vulpes walkforward: stopped by %s after %lld of %lld folds; continue with: vulpes "
                "walkforward --resume %s\n", vp_cli_stop_name(), (long long)r.n_done, (long long)r.n_folds, dir);
    vp_wf_result_free(&r);
    return interrupted ? vp_cli_stop_status() : 0;
}
