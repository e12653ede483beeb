/* `vulpes act --checkpoint CK [--data FILE] [--force] [--backend B] [KEY=VALUE ...]`: the
 * exact backtest of the checkpoint over every bar of the data after the feature warm-up (the
 * backtest job's loading and data checks, no output folder: vp_backtest_job_rollout), and
 * its decision for the bar after the last one printed as one JSON object on stdout
 * (vp_act_json); the data checks' warnings and notices also go to stderr. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/backtest.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes act --checkpoint CK [--data FILE] [--force] [--backend cpu|cuda|auto] [KEY=VALUE ...]\n\n"
            "Prints, as one JSON object, what the checkpoint's network decides at the last bar's close for the\n"
            "bar after it: direction, size, take-profit and stop-loss (ATR multiples and prices from the last\n"
            "close), the Q value of every choice per branch, and the margin the choice won by. The decision is\n"
            "the exact backtest's decision after its span, the span being every bar of FILE after the feature\n"
            "warm-up (as `vulpes backtest --span all`); nothing is written to disk.\n\n"
            "  --checkpoint CK  best.safetensors (or last.safetensors) of a training run\n"
            "  --data FILE      CSV bars (or synth:KIND[:...]); default: the training data the checkpoint\n"
            "                   recorded\n"
            "  --force          decide despite the data checks' refusals (prices at another scale)\n"
            "  --backend B      where to run (default auto: the GPU when one is usable)\n\n"
            "KEY=VALUE changes an instrument.* key, data.price_side, metrics.risk_free_rate or her.eval_goal (the\n"
            "goal of a goal-conditioned network) for this run only (as for vulpes backtest).\n");
}

/* Command-line choices. */
typedef struct act_args {
    vp_backtest_job job; /* the job: span all, exact path */
    const char* backend; /* --backend (default auto) */
    vp_cli_args cl;      /* the parsed line: the KEY=VALUE overrides */
} act_args;

/* Parses argv with the shared parser (cli_args.h); returns 0, or the exit code of a usage error
 * or --help (-1: help shown). */
static int parse(int argc, char** argv, act_args* a) {
    memset(a, 0, sizeof *a);
    vp_backtest_job* job = &a->job;
    a->backend = "auto";
    const vp_cli_opt opts[] = {
        {"--checkpoint", VP_CLI_TEXT, &job->checkpoint, NULL, 0, 0, NULL},
        {"--data", VP_CLI_TEXT, &job->data, NULL, 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &job->force, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, &a->backend, NULL, 0, 0, VP_CLI_BACKENDS},
    };
    const vp_cli_spec spec = {"act", opts, (int)(sizeof opts / sizeof opts[0]), 0, 1, usage};
    const int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    if (!job->checkpoint) {
        fprintf(stderr, "vulpes act: --checkpoint is required\n\n");
        usage(stderr);
        return 2;
    }
    job->span = "all";
    job->n_windows = 1;
    job->fused = 1;
    job->n_overrides = a->cl.n_over;
    job->overrides = a->cl.over;
    return 0;
}

int vp_cmd_act(int argc, char** argv) {
    act_args a;
    const int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;
    vp_backend* b = vp_cli_backend(a.backend);
    if (!b) return 1;
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    a.job.span_info = &si;
    vp_rollout_result r;
    vp_backtest_last_bar last;
    vp_status s = vp_backtest_job_rollout(b, &a.job, &r, &last);
    for (int i = 0; i < si.checks.n_notes; ++i) fprintf(stderr, "vulpes act: %s\n", si.checks.notes[i]);
    cJSON* obj = NULL;
    if (s == VP_OK) s = vp_act_json(&r, &last, a.job.checkpoint, si.checks.data, &si.checks, &obj);
    char* text = obj ? cJSON_Print(obj) : NULL;
    if (s == VP_OK && !text) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "vulpes act: out of memory printing the decision");
    if (s == VP_OK) printf("%s\n", text);
    free(text);
    cJSON_Delete(obj);
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    return s == VP_OK ? 0 : vp_cli_fail("in act");
}
