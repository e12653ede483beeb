/* `vulpes walkforward CONFIG [key=value ...] [--train-bars N --val-bars N --test-bars N]
 * [--step-bars N] [--embargo-bars N] [--anchored] [--warm-start] [--max-folds N] [--parallel N]
 * [--out DIR] [--force] [--backend B]`, or `vulpes walkforward --resume DIR`: parses the line with
 * the shared parser (cli_args.h; the fold flags are walkforward.* overrides), resolves the config,
 * traps Ctrl-C, runs vp_walkforward_run with its progress line on stderr and prints the per-fold
 * table. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_job.h"
#include "cli/commands.h"
#include "vulpes/walkforward.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes walkforward CONFIG [key=value ...] [--train-bars N] [--val-bars N] [--test-bars N]\n"
            "                          [--step-bars N] [--embargo-bars N] [--anchored] [--warm-start]\n"
            "                          [--max-folds N] [--parallel N] [--devices LIST] [--out DIR] [--force]\n"
            "                          [--no-fused]\n"
            "       vulpes walkforward [CONFIG] --resume DIR [--parallel N] [--devices LIST] [key=value ...]\n"
            "       (both take --backend cpu|cuda|auto: run.backend)\n\n"
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
            "  --devices LIST    CUDA devices the folds at once spread over, round robin (run.devices: 0,2;\n"
            "                    default every visible device)\n"
            "  --out DIR         the walk-forward folder (default runs/YYYYmmdd-HHMMSS-walkforward-NAME)\n"
            "  --force           start over in a non-empty folder (the earlier walk-forward's files move\n"
            "                    into DIR/replaced-N; nothing is deleted)\n"
            "  --resume DIR      continue an interrupted walk-forward at its first unfinished fold (the\n"
            "                    config and fold settings come from DIR/config.yaml)\n"
            "  --no-fused        on CUDA, backtest through the op path instead of the one-kernel path\n"
            "  --backend B       where it runs: run.backend=B (cpu, cuda, or auto: the GPU when one is usable)\n\n"
            "Progress: one line on stderr with the fold, the folds done, the fold's iteration, env steps/s,\n"
            "loss, epsilon, validation Sharpe, elapsed time and the ETA over every fold, and a line per fold\n"
            "event (spans, warm-up, validations, test). Folds are numbered from 1 (folds/fold_001 ...); spans\n"
            "are written as the times of their first and last bars with the bar indices [begin, end). The\n"
            "end prints the per-fold table (a ruined test window marked), the stitched Sharpe with its\n"
            "standard error, PSR and deflated Sharpe over the folds, and the stitched metrics.\n\n"
            "Ctrl-C, SIGTERM or SIGHUP leaves the fold in progress unfinished; --resume DIR runs it again\n"
            "and goes on.\n");
}

/* Command-line choices. */
typedef struct wf_args {
    const char* config;
    const char* out;
    const char* resume;
    int force, no_fused;
    vp_cli_args cl; /* the overrides: key=value, then the fold flags' and --backend's */
} wf_args;

/* The fold layout's flags (refused with --resume, which keeps the folder's folds). */
static const char* const FOLD_FLAGS[] = {"--train-bars", "--val-bars", "--test-bars", "--step-bars",
                                         "--embargo-bars", "--max-folds", "--anchored", "--warm-start"};

/* Parses argv; returns 0, or the exit code of a usage error / --help (-1: help shown). */
static int parse(int argc, char** argv, wf_args* a) {
    memset(a, 0, sizeof *a);
    // each flag of the fold layout is the override of its walkforward.* key
    const vp_cli_opt opts[] = {
        {"--train-bars", VP_CLI_COUNT, NULL, "walkforward.train_bars", 1, INT64_MAX, NULL},
        {"--val-bars", VP_CLI_COUNT, NULL, "walkforward.val_bars", 1, INT64_MAX, NULL},
        {"--test-bars", VP_CLI_COUNT, NULL, "walkforward.test_bars", 1, INT64_MAX, NULL},
        {"--step-bars", VP_CLI_COUNT, NULL, "walkforward.step_bars", 0, INT64_MAX, NULL},
        {"--embargo-bars", VP_CLI_COUNT, NULL, "walkforward.embargo_bars", 0, INT64_MAX, NULL},
        {"--max-folds", VP_CLI_COUNT, NULL, "walkforward.max_folds", 0, INT64_MAX, NULL},
        {"--anchored", VP_CLI_SWITCH, NULL, "walkforward.anchored", 0, 0, NULL},
        {"--warm-start", VP_CLI_SWITCH, NULL, "walkforward.warm_start", 0, 0, NULL},
        {"--parallel", VP_CLI_COUNT, NULL, "walkforward.parallel", 1, INT64_MAX, NULL},
        {"--devices", VP_CLI_TEXT, NULL, "run.devices", 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, NULL, "run.backend", 0, 0, VP_CLI_BACKENDS},
        {"--out", VP_CLI_TEXT, &a->out, NULL, 0, 0, NULL},
        {"--resume", VP_CLI_TEXT, &a->resume, NULL, 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &a->force, NULL, 0, 0, NULL},
        {"--no-fused", VP_CLI_SWITCH, &a->no_fused, NULL, 0, 0, NULL},
    };
    const vp_cli_spec spec = {"walkforward", opts, (int)(sizeof opts / sizeof opts[0]), 1, 1, usage};
    int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    a->config = a->cl.n_positional ? a->cl.positional[0] : NULL;
    int fold_flags = 0;
    for (size_t i = 0; i < sizeof FOLD_FLAGS / sizeof FOLD_FLAGS[0]; ++i) fold_flags += vp_cli_given(&spec, &a->cl, FOLD_FLAGS[i]);
    if (a->resume && (a->out || a->force || fold_flags)) {
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

    // config (the folder's on a resume, which holds its fold settings) with the overrides
    vp_cli_job j;
    rc = vp_cli_job_config(&j, "walkforward", a.config, a.resume, &a.cl);
    if (rc != 0) return rc;
    const vp_config_walkforward* w = &j.cfg.walkforward;
    if (w->train_bars <= 0 || w->val_bars <= 0 || w->test_bars <= 0) {
        fprintf(stderr, "vulpes walkforward: the fold lengths are missing: set walkforward.train_bars, val_bars "
                "and test_bars in %s (or --train-bars, --val-bars, --test-bars)\n", j.cfg_path);
        return 2;
    }
    // the folder, the backend; Ctrl-C, SIGTERM, SIGHUP stop the fold in progress between iterations
    vp_backend* b = vp_cli_job_open(&j, a.resume, a.out, a.force);
    if (!b) return 1;
    vp_wf_opts o = {j.dir, j.mode, stderr, &vp_cli_stop, 0, !a.no_fused, isatty(fileno(stderr)), 0.0};
    vp_wf_result r;
    vp_status s = vp_walkforward_run(&j.cfg, b, &o, &r);
    vp_backend_free(b);
    if (s != VP_OK) {
        vp_wf_result_free(&r);
        return vp_cli_fail("in the walk-forward");
    }
    if (r.n_done > 0) vp_wf_print(&r, stdout);
    printf("\nwalk-forward folder: %s\n", j.dir);
    char done[64];
    snprintf(done, sizeof done, "%lld of %lld %s", (long long)r.n_done, (long long)r.n_folds,
             vp_plural(r.n_folds, "fold", "folds"));
    const int interrupted = r.interrupted;
    vp_wf_result_free(&r);
    return vp_cli_job_end(&j, interrupted, done);
}
