/* `vulpes backtest --checkpoint CK [--data FILE] [--span S] [--from T0] [--to T1] [--out DIR] [--force]
 * [--segments N] [--backend B] [--no-fused] [KEY=VALUE ...]`: parses the line with the shared
 * parser (cli_args.h), runs vp_backtest_job_run, prints the
 * data checks' warnings and notices (stderr), the data used, the span, its overlap with the
 * training run's bars, the result (vp_backtest_print: a ruin first, the metrics table) and the
 * output folder. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/backtest.h"

/* The keys a backtest may override, from the config table: name, then its line of doc. */
static void list_overridable(FILE* f) {
    for (int i = 0; i < vp_config_key_count(); ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        if (vp_backtest_key_overridable(k->name)) fprintf(f, "  %-28s %s\n", k->name, k->doc);
    }
}

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes backtest --checkpoint CK [--data FILE] [--span train|val|test|all] [--from T0] [--to T1]\n"
            "                       [--out DIR] [--force] [--segments N] [--backend cpu|cuda|auto] [--no-fused]\n"
            "                       [KEY=VALUE ...]\n\n"
            "Runs the checkpoint's network greedily over a span of FILE with the training run's costs and\n"
            "writes trades.csv, equity.csv, summary.json and report.html. By default the span is the training\n"
            "run's test span (its split recomputed from the checkpoint's config and the data): bars it never saw.\n"
            "A span with bars the training run trained or validated on is warned about as in-sample.\n\n"
            "The data is checked against the record of the training data in the checkpoint: bars at another\n"
            "spacing (1 day against 1 hour), a first order beyond instrument.max_leverage, bars seen in\n"
            "training are warned about; another file is noted; prices more than 10x from the training's are\n"
            "refused (--force runs them anyway). Warnings and notices also go into summary.json (\"warnings\").\n\n"
            "  --checkpoint CK  best.safetensors (or last.safetensors) of a training run; its config gives the\n"
            "                   network, instrument, episode length and features\n"
            "  --data FILE      CSV bars (or synth:KIND[:...]); default: the training data the checkpoint\n"
            "                   recorded (its absolute path; refused when gone or changed)\n"
            "  --span S         train, val or test: that span of the training run's split; all: every bar after\n"
            "                   the feature warm-up; default: test (all when --from or --to is given)\n"
            "  --from T0        first decision bar, replacing the span's: a bar index, or a time (2017-06-01,\n"
            "                   2017-06-01T12:00)\n"
            "  --to T1          end of the span, exclusive (same forms), replacing the span's\n"
            "  --out DIR        output folder (default runs/YYYYmmdd-HHMMSS-backtest); must be absent or empty\n"
            "  --force          run despite the data checks' refusals (prices at another scale), and reuse a\n"
            "                   non-empty output folder (the earlier files move into DIR/replaced-N)\n"
            "  --segments N     N windows side by side, each starting flat (fast; default 1: the exact path)\n"
            "  --backend B      where to run (default auto: the GPU when one is usable)\n"
            "  --no-fused       on CUDA, run the op path instead of the one-kernel sequential path\n\n"
            "KEY=VALUE changes one of these for this backtest only (cost sensitivity without retraining, and\n"
            "her.eval_goal the goal a goal-conditioned network acts towards; any other key is refused: the\n"
            "network keeps its training config):\n");
    list_overridable(f);
}

/* The span's source, bars and dates, and how many of its bars the training run saw. */
static void print_span(const vp_rollout_result* r, const vp_backtest_span_info* si) {
    char a[32], b[32];
    printf("span: %s, bars %lld..%lld (%s to %s)\n", si->source, (long long)r->span.begin,
           (long long)(r->span.end - 1), vp_time_format_iso(r->curve_time_ms[0], a, sizeof a),
           vp_time_format_iso(r->curve_time_ms[r->n_curve - 1], b, sizeof b));
    if (!si->overlap_known)
        printf("overlap with training: unknown (%s)\n", si->unknown_why);
    else if (si->train_bars + si->val_bars == 0)
        printf("overlap with training: none (0 of the %lld bars were seen in training)\n", (long long)si->n_bars);
    else
        printf("overlap with training: %lld of the %lld bars were seen in training (%lld train, %lld validation): "
               "in-sample\n", (long long)(si->train_bars + si->val_bars), (long long)si->n_bars,
               (long long)si->train_bars, (long long)si->val_bars);
}

/* The data checks' warnings and notices on stderr, one line each. */
static void print_checks(const vp_backtest_checks* c) {
    for (int i = 0; i < c->n_notes; ++i) fprintf(stderr, "vulpes backtest: %s\n", c->notes[i]);
}

/* Command-line choices. */
typedef struct backtest_args {
    vp_backtest_job job; /* the job as given (span_info set by the caller) */
    const char* backend; /* --backend (default auto) */
    vp_cli_args cl;      /* the parsed line: the KEY=VALUE overrides */
} backtest_args;

/* Parses argv with the shared parser (cli_args.h); returns 0, or the exit code of a usage error
 * or --help (-1: help shown). */
static int parse(int argc, char** argv, backtest_args* a) {
    memset(a, 0, sizeof *a);
    vp_backtest_job* job = &a->job;
    job->n_windows = 1;
    a->backend = "auto";
    int no_fused = 0;
    const vp_cli_opt opts[] = {
        {"--checkpoint", VP_CLI_TEXT, &job->checkpoint, NULL, 0, 0, NULL},
        {"--data", VP_CLI_TEXT, &job->data, NULL, 0, 0, NULL},
        {"--span", VP_CLI_CHOICE, &job->span, NULL, 0, 0, "train|val|test|all"},
        {"--from", VP_CLI_TEXT, &job->from, NULL, 0, 0, NULL},
        {"--to", VP_CLI_TEXT, &job->to, NULL, 0, 0, NULL},
        {"--out", VP_CLI_TEXT, &job->out, NULL, 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &job->force, NULL, 0, 0, NULL},
        {"--segments", VP_CLI_COUNT, &job->n_windows, NULL, 1, INT64_MAX, NULL},
        {"--backend", VP_CLI_CHOICE, &a->backend, NULL, 0, 0, VP_CLI_BACKENDS},
        {"--no-fused", VP_CLI_SWITCH, &no_fused, NULL, 0, 0, NULL},
    };
    // KEY=VALUE: costs, contract and measurement for this backtest (the job refuses other keys)
    const vp_cli_spec spec = {"backtest", opts, (int)(sizeof opts / sizeof opts[0]), 0, 1, usage};
    const int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    if (!job->checkpoint) {
        fprintf(stderr, "vulpes backtest: --checkpoint is required\n\n");
        usage(stderr);
        return 2;
    }
    job->fused = !no_fused;
    job->n_overrides = a->cl.n_over;
    job->overrides = a->cl.over;
    return 0;
}

int vp_cmd_backtest(int argc, char** argv) {
    backtest_args a;
    const int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;
    vp_backtest_job* job = &a.job;
    vp_backend* b = vp_cli_backend(a.backend);
    if (!b) return 1;
    vp_rollout_result r;
    char dir[1024];
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    job->span_info = &si;
    vp_status s = vp_backtest_job_run(b, job, &r, dir, sizeof dir);
    print_checks(&si.checks);
    if (s == VP_OK) {
        printf("data: %s%s\n", si.checks.data,
               si.checks.from_record ? " (the training data recorded in the checkpoint, unchanged)" : "");
        print_span(&r, &si);
        for (int k = 0; k < job->n_overrides; ++k) printf("override for this backtest: %s\n", job->overrides[k]);
        printf("backtest of bars [%lld, %lld): %lld decisions, %lld window%s, %s path on %s\n",
               (long long)r.span.begin, (long long)r.span.end, (long long)(r.span.end - r.span.begin - 1),
               (long long)r.n_windows, r.n_windows == 1 ? "" : "s", r.path, vp_backend_name(b));
        printf("encoding %.3f s, sequential part %.3f s (%.0f bars/s)\n\n", r.encode_s, r.sequential_s,
               r.sequential_s > 0 ? (double)(r.span.end - r.span.begin - 1) / r.sequential_s : 0.0);
        s = vp_backtest_print(&r, stdout);
        printf("\noutput folder: %s\n", dir);
    }
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    return s == VP_OK ? 0 : vp_cli_fail("in the backtest");
}
