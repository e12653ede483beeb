/* `vulpes train CONFIG [key=value ...] [--out DIR] [--force] [--resume DIR] [--backend B] [--gpus N]`: parses
 * the line with the shared parser (cli_args.h), resolves the config, picks the backend, traps
 * Ctrl-C and runs vp_train_run with the progress line on
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

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes train CONFIG [key=value ...] [--out DIR] [--force] [--backend cpu|cuda|auto] [--gpus N]\n"
            "       vulpes train [CONFIG] --resume DIR [key=value ...] [--backend cpu|cuda|auto]\n\n"
            "Trains on the bars of data.path (a CSV file, or synth:KIND[:key=value,...]), validates every\n"
            "train.eval_every iterations, keeps best.safetensors and last.safetensors in the run folder\n"
            "(--out DIR, run.out, else runs/YYYYmmdd-HHMMSS-NAME); at the end backtests the test span\n"
            "with the best parameters (trades.csv, equity.csv, report.html, summary.json) and prints the\n"
            "folder.\n\n"
            "  key=value      a config override (vulpes config --defaults lists the keys)\n"
            "  --out DIR      the run folder (must be absent or empty): run.out=DIR\n"
            "  --force        reuse a run folder: the earlier run's files (config.yaml, metrics.jsonl,\n"
            "                 the checkpoints, summary.json, the test-span files) move into\n"
            "                 DIR/replaced-N; nothing is deleted and other files stay\n"
            "  --resume DIR   continue the run in DIR from its last.safetensors (CONFIG defaults to\n"
            "                 DIR/config.yaml; only train.iterations, checkpoint_every, log_every and\n"
            "                 run.* may differ)\n"
            "  --backend B    where it runs: run.backend=B (cpu, cuda, or auto: the GPU when one is usable)\n"
            "  --gpus N       N ranks of a data-parallel run on this machine, one per GPU (docs/distributed.md);\n"
            "                 1 (the default) runs in this process; more need --backend cuda and learn.batch and\n"
            "                 env.n_envs divisible by N. Under mpirun the ranks come from MPI's variables, and\n"
            "                 with --backend cpu they talk through MPI (a build with MPI).\n\n"
            "Progress: a line with the iteration, env steps/s, loss, epsilon, validation Sharpe, elapsed time\n"
            "and ETA on stderr (redrawn on a terminal, every 10 s otherwise), the warm-up notice first. On the\n"
            "CPU a run projected past 15 minutes after its first iterations is warned of, with the measured\n"
            "time per iteration; examples/eurusd.yaml is the CPU example.\n\n"
            "Ctrl-C, SIGTERM or SIGHUP writes last.safetensors and stops (exit 130, 143, 129); --resume\n"
            "continues bit for bit (same backend). A run whose every learner step in a log interval is\n"
            "non-finite fails (exit 1; no summary.json). While a command writes a folder it holds\n"
            "DIR/.lock; another command on the folder is refused.\n");
}

/* Command-line choices. */
typedef struct train_args {
    const char* config; /* CONFIG (NULL: DIR/config.yaml on a resume) */
    const char* out;    /* --out */
    const char* resume; /* --resume */
    int force;          /* --force */
    int64_t gpus;       /* --gpus N (0: not given, one rank) */
    vp_cli_args cl;     /* the parsed line: the overrides, then --out as run.out=DIR and --backend as run.backend */
} train_args;

/* Parses argv; returns 0, or the exit code of a usage error / --help (-1: help shown). */
static int parse(int argc, char** argv, train_args* a) {
    memset(a, 0, sizeof *a);
    const char* backend = NULL;
    const vp_cli_opt opts[] = {
        {"--out", VP_CLI_TEXT, &a->out, "run.out", 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &a->force, NULL, 0, 0, NULL},
        {"--resume", VP_CLI_TEXT, &a->resume, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, &backend, "run.backend", 0, 0, VP_CLI_BACKENDS},
        {"--gpus", VP_CLI_COUNT, &a->gpus, NULL, 1, 64, NULL},
    };
    const vp_cli_spec spec = {"train", opts, (int)(sizeof opts / sizeof opts[0]), 1, 1, usage};
    int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    a->config = a->cl.n_positional ? a->cl.positional[0] : NULL;
    if (!a->config && !a->resume) {
        usage(stderr);
        return 2;
    }
    if (a->resume && (a->out || a->force)) {
        fprintf(stderr, "vulpes train: --resume continues its own folder; --out and --force do not apply\n");
        return 2;
    }
    return 0;
}

/* One line per outcome on stderr; `exact` the metrics of the test span's exact backtest
 * (finished runs). */
static void report(const vp_train_result* r, const vp_metrics_summary* exact) {
    char dsr[32];
    if (!isnan(r->best_val_sharpe))
        fprintf(stderr, "best validation Sharpe %.3f at iteration %lld; deflated Sharpe %s over %lld %s\n",
                r->best_val_sharpe, (long long)r->best_iteration,
                vp_metric_format(r->best_val_deflated_sharpe, VP_METRIC_UNIT_FRAC, dsr, sizeof dsr),
                (long long)r->val_trials, vp_plural(r->val_trials, "validation", "validations"));
    if (r->interrupted) return;
    const vp_perf* t = &r->test.strategy;
    if (r->test.ruined)
        fprintf(stderr, "test span RUINED: equity reached the ruin level (env.ruin_fraction); the figures below are not "
                "a normal result (report.html, summary.json \"test\".\"ruin\")\n");
    char rf[64], sh[32], se[32], p0[32], pb[32], bh[32];
    fprintf(stderr, "test span (%s, exact backtest): Sharpe %s +- %s (SE; %s), PSR vs 0 %s, vs buy & hold %s, "
            "total return %.2f %%, max drawdown %.2f %%, %lld %s; buy & hold Sharpe %s%s%s (report.html)\n",
            r->best_iteration >= 0 ? "best parameters" : "final parameters",
            vp_metric_format(t->sharpe, VP_METRIC_UNIT_RATIO, sh, sizeof sh),
            vp_metric_format(t->sharpe_se, VP_METRIC_UNIT_RATIO, se, sizeof se),
            vp_risk_free_describe(t->risk_free_rate, rf, sizeof rf),
            vp_metric_format(t->psr_vs_zero, VP_METRIC_UNIT_FRAC, p0, sizeof p0),
            vp_metric_format(vp_perf_psr_vs(t, &r->test.buy_hold), VP_METRIC_UNIT_FRAC, pb, sizeof pb),
            100.0 * t->total_return, 100.0 * t->max_drawdown, (long long)exact->trades.n_trades,
            vp_plural(exact->trades.n_trades, "trade", "trades"),
            vp_metric_format(r->test.buy_hold.sharpe, VP_METRIC_UNIT_RATIO, bh, sizeof bh),
            isnan(t->sharpe) ? "; the Sharpe is undefined (\"-\"): its returns do not vary" : "",
            t->extrapolated ? "; annual figures extrapolated from less than a year" : "");
}

/* --gpus N > 1 in a process that is no rank: the request checked, then N ranks of this command
 * line started and waited for (src/dist/launch.c); the exit code. */
static int launch(int gpus, const vp_config* cfg, int argc, char** argv) {
    if (vp_launch_check(cfg, gpus, vp_launch_cuda_devices()) != VP_OK) return vp_cli_fail("in --gpus");
    vp_cli_trap_signals();
    vp_launch_opts lo = vp_launch_opts_default();
    lo.stop = &vp_cli_stop;
    fprintf(stderr, "vulpes train: %d ranks on this machine, one per GPU\n", gpus);
    vp_launch_result lr;
    if (vp_launch_self(gpus, argc, argv, &lo, &lr) == VP_OK) return 0;
    vp_cli_fail("in the ranks");
    return vp_cli_stop ? vp_cli_stop_status() : 1;
}

/* The rank's backend b (made with status made) and its communicator into *comm: b, or NULL
 * after the message (b freed). */
static vp_backend* connect_rank(vp_status made, vp_backend* b, const vp_dist* d, vp_comm** comm) {
    if (made != VP_OK) {
        vp_cli_fail("creating the rank's backend");
        return NULL;
    }
    if (vp_comm_init(comm, d, b, NULL) != VP_OK) {
        vp_cli_fail("connecting the ranks");
        vp_backend_free(b);
        return NULL;
    }
    return b;
}

/* A CPU rank under mpirun (run.backend cpu, MPI's variables): the request checked, the CPU
 * backend and its MPI communicator into *comm; NULL after the message. */
static vp_backend* cpu_rank_backend(const vp_dist* d, const vp_config* cfg, vp_comm** comm) {
    if (vp_launch_check_ranks(cfg, d->size) != VP_OK) {
        vp_cli_fail("in the rank's request");
        return NULL;
    }
    vp_backend* b = NULL;
    const vp_status made = vp_backend_cpu_init(&b);
    return connect_rank(made, b, d, comm);
}

/* A rank of a data-parallel run (its variables set): the request checked as the launcher does,
 * the CUDA backend on the rank's GPU and its communicator into *comm (or, on the CPU under
 * mpirun, cpu_rank_backend's); NULL after the message. */
static vp_backend* rank_backend(const vp_dist* d, const vp_config* cfg, int64_t gpus, vp_comm** comm) {
    if (gpus && gpus != d->size) {
        fprintf(stderr, "vulpes train: --gpus %lld, but this process is rank %d of %d (%s variables)\n",
                (long long)gpus, d->rank, d->size, vp_dist_source_name(d->source));
        return NULL;
    }
    if (cfg->run.backend == VP_RUN_BACKEND_CPU && (d->source == VP_DIST_OMPI || d->source == VP_DIST_PMI))
        return cpu_rank_backend(d, cfg, comm);
    // the device count per machine is checked when the backend takes its device
    if (vp_launch_check(cfg, d->size, d->size) != VP_OK) {
        vp_cli_fail("in the rank's request");
        return NULL;
    }
    vp_backend* b = NULL;
    const vp_status made = vp_backend_cuda_init(&b, d->local_rank);
    return connect_rank(made, b, d, comm);
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
    if (vp_config_resolve(&cfg, cfg_path, a.cl.n_over, a.cl.over) != VP_OK) return vp_cli_fail("in the configuration");
    // --gpus N, or a rank of a run that a launcher (ours, or mpirun) started
    vp_dist dist;
    if (vp_dist_from_env(&dist) != VP_OK) return vp_cli_fail("in the rank variables");
    if (dist.size == 1 && a.gpus > 1) return launch((int)a.gpus, &cfg, argc, argv);
    vp_comm* comm = NULL;
    vp_backend* b = dist.size > 1 ? rank_backend(&dist, &cfg, a.gpus, &comm) : vp_cli_backend_for(&cfg);
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
    o.comm = comm;
    // a data-parallel run: rank 0 speaks for the run
    const int lead = dist.rank == 0;
    if (dist.size > 1 && lead)
        fprintf(stderr, "vulpes train: %s on %s, rank 0 of %d (%s)\n", cfg.data.path, vp_backend_name(b), dist.size,
                vp_comm_kind_name(vp_comm_get_kind(comm)));
    else if (lead)
        fprintf(stderr, "vulpes train: %s on %s\n", cfg.data.path, vp_backend_name(b));
    vp_train_result r;
    vp_status s = vp_train_run(&cfg, b, &o, &r);
    if (s != VP_OK && dist.size > 1) {
        // the others may wait in a collective for this rank: under MPI they end with it
        vp_cli_fail("training");
        vp_comm_abort(comm, 1);
        vp_comm_free(comm);
        vp_backend_free(b);
        return 1;
    }
    vp_comm_free(comm);
    vp_backend_free(b);
    if (s != VP_OK) return vp_cli_fail("training");
    if (!lead) return r.interrupted ? vp_cli_stop_status() : 0;
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
