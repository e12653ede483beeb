/* `vulpes search CONFIG SPACE.yaml --trials N [--eta E] [--min-iterations R] [--seed S]
 * [--parallel P] [--out DIR] [--force] [--backend B] [key=value ...]`, or `vulpes search
 * [CONFIG [SPACE.yaml]] --resume DIR [--parallel P]`: parses the line with the shared parser
 * (cli_args.h), resolves the base config and the space, traps Ctrl-C, runs vp_search_run with
 * its lines on stderr and prints the table. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_job.h"
#include "cli/commands.h"
#include "vulpes/search.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes search CONFIG SPACE.yaml --trials N [--eta E] [--min-iterations R] [--seed S]\n"
            "                     [--parallel P] [--devices LIST] [--out DIR] [--force] [--backend cpu|cuda|auto] [key=value ...]\n"
            "       vulpes search [CONFIG [SPACE.yaml]] --resume DIR [--parallel P] [--devices LIST]\n"
            "                     [--backend cpu|cuda|auto]\n\n"
            "Draws N trials from the search space (each the base config with its keys drawn: uniform,\n"
            "log_uniform, int or choice) and trains them by successive halving on the validation score:\n"
            "every trial for R iterations, then the best ceil(n / E) of each rung continued to E times the\n"
            "iterations, up to train.iterations. Each trial is a `vulpes train` run folder DIR/trial-NNN;\n"
            "DIR holds results.csv, results.json, best.yaml (the winner's config) and report.html, with the\n"
            "winner's deflated Sharpe over the trials (docs/search.md).\n\n"
            "  --trials N          trials drawn (1 .. %d)\n"
            "  --eta E             the halving factor: a rung keeps the best ceil(n / E) (default 3)\n"
            "  --min-iterations R  the first rung's iterations (default train.iterations / E^(rungs - 1),\n"
            "                      rungs = 1 + floor(log_E N))\n"
            "  --seed S            the search seed the draws come from (default 0)\n"
            "  --parallel P        train up to P trials at once, each on its own backend (fewer when free GPU\n"
            "                      memory holds fewer); the same results whatever P\n"
            "  --devices LIST      CUDA devices the trials at once spread over, round robin (run.devices:\n"
            "                      0,2; default every visible device)\n"
            "  --out DIR           the search folder (default runs/YYYYmmdd-HHMMSS-search-NAME)\n"
            "  --force             start over in a non-empty folder\n"
            "  --resume DIR        continue a search: finished trials are skipped, interrupted ones continue\n"
            "                      from their last.safetensors (the plan, space and config come from DIR; any\n"
            "                      given must be the same)\n"
            "  --backend B         where it runs: run.backend=B (cpu, cuda, or auto: the GPU when one is usable)\n\n"
            "The space and every trial's config are checked before anything is trained; a refused command\n"
            "leaves no folder behind. Ctrl-C, SIGTERM or SIGHUP stops the trials in progress (each keeps its\n"
            "last.safetensors); --resume DIR goes on.\n",
            VP_SEARCH_MAX_TRIALS);
}

/* Command-line choices. */
typedef struct search_args {
    const char* config;
    const char* space;
    const char* out;
    const char* resume;
    int force;
    int64_t trials, eta, min_iterations, seed, parallel;
    vp_cli_args cl; /* the overrides: key=value, then --backend's */
} search_args;

/* Parses argv; returns 0, or the exit code of a usage error / --help (-1: help shown). */
static int parse(int argc, char** argv, search_args* a) {
    memset(a, 0, sizeof *a);
    a->trials = -1, a->eta = 3, a->min_iterations = 0, a->seed = 0, a->parallel = 1;
    const vp_cli_opt opts[] = {
        {"--trials", VP_CLI_COUNT, &a->trials, NULL, 1, VP_SEARCH_MAX_TRIALS, NULL},
        {"--eta", VP_CLI_COUNT, &a->eta, NULL, 2, 1000000, NULL},
        {"--min-iterations", VP_CLI_COUNT, &a->min_iterations, NULL, 1, VP_CONFIG_INT_MAX, NULL},
        {"--seed", VP_CLI_COUNT, &a->seed, NULL, 0, 9007199254740992LL, NULL},
        {"--parallel", VP_CLI_COUNT, &a->parallel, NULL, 1, 4096, NULL},
        {"--devices", VP_CLI_TEXT, NULL, "run.devices", 0, 0, NULL},
        {"--out", VP_CLI_TEXT, &a->out, NULL, 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &a->force, NULL, 0, 0, NULL},
        {"--resume", VP_CLI_TEXT, &a->resume, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, NULL, "run.backend", 0, 0, VP_CLI_BACKENDS},
    };
    const vp_cli_spec spec = {"search", opts, (int)(sizeof opts / sizeof opts[0]), 2, 1, usage};
    int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    a->config = a->cl.n_positional > 0 ? a->cl.positional[0] : NULL;
    a->space = a->cl.n_positional > 1 ? a->cl.positional[1] : NULL;
    if (a->resume) {
        if (a->out || a->force) {
            fprintf(stderr, "vulpes search: --resume continues its folder; --out and --force do not apply\n");
            return 2;
        }
        // on a resume only what is given is compared with the plan
        if (!vp_cli_given(&spec, &a->cl, "--eta")) a->eta = -1;
        if (!vp_cli_given(&spec, &a->cl, "--min-iterations")) a->min_iterations = -1;
        if (!vp_cli_given(&spec, &a->cl, "--seed")) a->seed = -1;
        return 0;
    }
    if (!a->config || !a->space || a->trials < 1) {
        fprintf(stderr, "vulpes search: %s is required\n\n", !a->config ? "CONFIG" : !a->space ? "SPACE.yaml" : "--trials");
        usage(stderr);
        return 2;
    }
    return 0;
}

int vp_cmd_search(int argc, char** argv) {
    search_args a;
    int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;

    // the base config (the folder's on a resume) with the overrides, the space
    vp_cli_job j;
    rc = vp_cli_job_config(&j, "search", a.config, a.resume, &a.cl);
    if (rc != 0) return rc;
    vp_search_space* space = a.space ? (vp_search_space*)calloc(1, sizeof *space) : NULL;
    if (a.space && !space) {
        fprintf(stderr, "vulpes search: out of memory\n");
        return 1;
    }
    if (space && vp_search_space_load(a.space, &j.cfg, space) != VP_OK) {
        free(space);
        return vp_cli_fail("in the search space");
    }
    // the folder, the backend; Ctrl-C, SIGTERM, SIGHUP stop the trials in progress (each checkpoints)
    vp_backend* b = vp_cli_job_open(&j, a.resume, a.out, a.force);
    if (!b) {
        free(space);
        return 1;
    }
    vp_search_opts o = {j.dir, j.mode, space, a.trials, a.eta, a.min_iterations, a.seed, a.parallel, stderr,
                        &vp_cli_stop, 0, 1};
    vp_search_result* r = (vp_search_result*)calloc(1, sizeof *r);
    vp_status s = r ? vp_search_run(&j.cfg, b, &o, r) : VP_ERR_OOM;
    vp_backend_free(b);
    free(space);
    if (s != VP_OK) {
        free(r);
        if (!r) {
            fprintf(stderr, "vulpes search: out of memory\n");
            return 1;
        }
        return vp_cli_fail("in the search");
    }
    vp_search_print(r, stdout);
    printf("\nsearch folder: %s (report.html, results.csv, results.json%s)\n", j.dir, r->best >= 0 ? ", best.yaml" : "");
    char done[64];
    snprintf(done, sizeof done, "%d of %d rungs", r->rungs_done, r->n_rungs);
    const int interrupted = r->interrupted;
    vp_search_result_free(r);
    free(r);
    return vp_cli_job_end(&j, interrupted, done);
}
