/* `vulpes train CONFIG [key=value ...] [--out DIR] [--force] [--resume DIR]`: resolves the
 * config, picks the backend, traps Ctrl-C and runs vp_train_run with the progress line on
 * stderr and the test span's files as its finishing step (vp_backtest_train_finish: the CLI
 * joins eval to learn, which knows only the hook); prints the run folder at the end. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "vulpes/backtest.h"
#include "vulpes/train.h"

/* Most key=value overrides on one command line. */
#define MAX_OVERRIDES 256

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes train CONFIG [key=value ...] [--out DIR] [--force]\n"
            "       vulpes train [CONFIG] --resume DIR [key=value ...]\n\n"
            "Trains on the bars of data.path (a CSV file, or synth:KIND[:key=value,...]), validates every\n"
            "train.eval_every iterations, keeps best.safetensors and last.safetensors in the run folder\n"
            "(--out DIR, run.out, else runs/YYYYmmdd-HHMMSS-NAME); at the end backtests the test span\n"
            "with the best parameters (trades.csv, equity.csv, report.html, summary.json) and prints the\n"
            "folder.\n\n"
            "  --out DIR      the run folder (must be absent or empty)\n"
            "  --force        reuse a run folder: the earlier run's files (config.yaml, metrics.jsonl,\n"
            "                 the checkpoints, summary.json, the test-span files) move into\n"
            "                 DIR/replaced-N; nothing is deleted and other files stay\n"
            "  --resume DIR   continue the run in DIR from its last.safetensors (CONFIG defaults to\n"
            "                 DIR/config.yaml; only train.iterations, checkpoint_every, log_every and\n"
            "                 run.* may differ)\n\n"
            "Ctrl-C, SIGTERM or SIGHUP writes last.safetensors and stops (exit 130, 143, 129); --resume\n"
            "continues bit for bit (same backend). A run whose every learner step in a log interval is\n"
            "non-finite fails (exit 1; no summary.json). While a command writes a folder it holds\n"
            "DIR/.lock; another command on the folder is refused.\n");
}

/* Command-line choices. */
typedef struct train_args {
    const char* config;               /* CONFIG (NULL: DIR/config.yaml on a resume) */
    const char* out;                  /* --out */
    const char* resume;               /* --resume */
    int force;                        /* --force */
    int n_over;                       /* overrides */
    char* over[MAX_OVERRIDES + 1];    /* key=value, --out as run.out=DIR last */
    char out_kv[VP_CONFIG_STR_MAX + 16]; /* storage of run.out=DIR */
} train_args;

/* Parses argv; returns 0, or the exit code of a usage error / --help. */
static int parse(int argc, char** argv, train_args* a) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; ++i) {
        const char* s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(s, "--out") == 0 && i + 1 < argc) {
            a->out = argv[++i];
        } else if (strcmp(s, "--resume") == 0 && i + 1 < argc) {
            a->resume = argv[++i];
        } else if (strcmp(s, "--force") == 0) {
            a->force = 1;
        } else if (s[0] != '-' && strchr(s, '=') != NULL) {
            if (a->n_over == MAX_OVERRIDES) {
                fprintf(stderr, "vulpes train: more than %d overrides\n", MAX_OVERRIDES);
                return 2;
            }
            a->over[a->n_over++] = argv[i];
        } else if (s[0] != '-' && !a->config) {
            a->config = s;
        } else {
            fprintf(stderr, "vulpes train: unexpected argument '%s'\n\n", s);
            usage(stderr);
            return 2;
        }
    }
    if (!a->config && !a->resume) {
        usage(stderr);
        return 2;
    }
    if (a->resume && (a->out || a->force)) {
        fprintf(stderr, "vulpes train: --resume continues its own folder; --out and --force do not apply\n");
        return 2;
    }
    if (a->out) {
        snprintf(a->out_kv, sizeof a->out_kv, "run.out=%s", a->out);
        a->over[a->n_over++] = a->out_kv;
    }
    return 0;
}

/* One line per outcome on stderr; `exact` the metrics of the test span's exact backtest
 * (finished runs). */
static void report(const vp_train_result* r, const vp_metrics_summary* exact) {
    if (!isnan(r->best_val_sharpe))
        fprintf(stderr, "best validation Sharpe %.3f at iteration %lld; deflated Sharpe %.3f over %lld validations\n",
                r->best_val_sharpe, (long long)r->best_iteration, r->best_val_deflated_sharpe,
                (long long)r->val_trials);
    if (r->interrupted) return;
    const vp_perf* t = &r->test.strategy;
    if (r->test.ruined)
        fprintf(stderr, "test span RUINED: equity reached the ruin level (env.ruin_fraction); the figures below are not "
                "a normal result (report.html, summary.json \"test\".\"ruin\")\n");
    fprintf(stderr, "test span (%s, exact backtest): Sharpe %.3f +- %.3f (SE), PSR vs 0 %.1f %%, vs buy & hold %.1f %%, "
            "total return %.2f %%, max drawdown %.2f %%, %lld trades; buy & hold Sharpe %.3f%s (report.html)\n",
            r->best_iteration >= 0 ? "best parameters" : "final parameters", t->sharpe, t->sharpe_se,
            100.0 * t->psr_vs_zero, 100.0 * vp_perf_psr_vs(t, &r->test.buy_hold), 100.0 * t->total_return,
            100.0 * t->max_drawdown, (long long)exact->trades.n_trades, r->test.buy_hold.sharpe,
            t->extrapolated ? "; annual figures extrapolated from less than a year" : "");
}

int vp_cmd_train(int argc, char** argv) {
    train_args a;
    int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;

    // Config: the file (or the run folder's on a resume), then the overrides.
    char cfg_path[VP_RUN_PATH_MAX];
    if (a.config) snprintf(cfg_path, sizeof cfg_path, "%s", a.config);
    else snprintf(cfg_path, sizeof cfg_path, "%.1000s/config.yaml", a.resume);
    vp_config cfg;
    if (vp_config_resolve(&cfg, cfg_path, a.n_over, a.over) != VP_OK) return vp_cli_fail("in the configuration");
    vp_backend* b = vp_cli_backend_for(&cfg);
    if (!b) return 1;

    // Ctrl-C, SIGTERM, SIGHUP: checkpoint and stop between iterations; a second one ends the
    // process at once.
    vp_cli_trap_signals();

    vp_train_opts o = vp_train_opts_default();
    o.progress = stderr;
    o.progress_tty = isatty(fileno(stderr));
    o.progress_interval_s = o.progress_tty ? 0.25 : 10.0;
    o.stop = &vp_cli_stop;
    o.mode = a.resume ? VP_RUN_RESUME : (a.force ? VP_RUN_FORCE : VP_RUN_CREATE);
    o.run_dir = a.resume;
    o.config_path = cfg_path;
    vp_metrics_summary exact;
    memset(&exact, 0, sizeof exact);
    o.finish = vp_backtest_train_finish;
    o.ctx = &exact;
    fprintf(stderr, "vulpes train: %s on %s\n", cfg.data.path, vp_backend_name(b));
    vp_train_result r;
    vp_status s = vp_train_run(&cfg, b, &o, &r);
    vp_backend_free(b);
    if (s != VP_OK) return vp_cli_fail("training");
    report(&r, &exact);
    if (r.interrupted) {
        fprintf(stderr, "vulpes train: stopped by %s at iteration %lld; %s/last.safetensors holds the run.\n"
                "continue with: vulpes train %s --resume %s\n", vp_cli_stop_name(), (long long)r.count.iteration,
                r.run_dir, cfg_path, r.run_dir);
        printf("run folder: %s\n", r.run_dir);
        return vp_cli_stop_status();
    }
    printf("run folder: %s\n", r.run_dir);
    return 0;
}
