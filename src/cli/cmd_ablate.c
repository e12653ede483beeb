/* `vulpes ablate CONFIG --switch KEY[,KEY...] --seeds N [--parallel P] [--out DIR] [--force]
 * [--backend B] [key=value ...]`, or `vulpes ablate --resume DIR [--parallel P]`: parses the line
 * with the shared parser (cli_args.h), resolves the base config, traps Ctrl-C, runs
 * vp_ablate_run with its lines on stderr and prints the table. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_job.h"
#include "cli/commands.h"
#include "vulpes/ablate.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes ablate CONFIG --switch KEY[,KEY=VALUE...] --seeds N [--parallel P] [--out DIR] [--force]\n"
            "                     [--devices LIST] [--backend cpu|cuda|auto] [key=value ...]\n"
            "       vulpes ablate [CONFIG] --resume DIR [--parallel P] [--devices LIST] [--backend cpu|cuda|auto]\n\n"
            "Trains the base config and each variant of it (the base with one switch on) for N seeds each\n"
            "(run.seed = the base's seed + 0 .. N-1), each run a `vulpes train` run folder under\n"
            "DIR/runs/VARIANT/seed_S, and writes one table (console, DIR/ablate.csv, DIR/ablate.json) and\n"
            "one page (DIR/report.html, linking each run's report): per variant the test-span Sharpe mean\n"
            "+- its standard error over the seeds, the deflated Sharpe over every run as a trial (its best\n"
            "seed's), ms per learner step and the parameter count (docs/ablate.md).\n\n"
            "  --switch LIST   comma-separated switches: KEY turns a bool key on (KEY=true), KEY=VALUE sets\n"
            "                  any key; only model.*, learn.*, signals.*, replay.*, collect.*, curiosity.*,\n"
            "                  her.* and env.* keys, each changing the base\n"
            "  --seeds N       seeds per variant (>= 1)\n"
            "  --parallel P    train up to P runs at once, each on its own backend (fewer when free GPU\n"
            "                  memory holds fewer); the same figures whatever P\n"
            "  --devices LIST  CUDA devices the runs at once spread over, round robin (run.devices: 0,2;\n"
            "                  default every visible device)\n"
            "  --out DIR       the ablation folder (default runs/YYYYmmdd-HHMMSS-ablate-NAME)\n"
            "  --force         start over in a non-empty folder\n"
            "  --resume DIR    continue an ablation: finished runs are skipped, interrupted ones continue from\n"
            "                  their last.safetensors (the switches, seeds and config come from DIR)\n"
            "  --backend B     where it runs: run.backend=B (cpu, cuda, or auto: the GPU when one is usable)\n\n"
            "Every switch is checked before anything is trained; a refused command leaves no folder behind.\n"
            "Ctrl-C, SIGTERM or SIGHUP stops the runs in progress (each keeps its last.safetensors);\n"
            "--resume DIR goes on.\n");
}

/* Command-line choices. */
typedef struct ablate_args {
    const char* config;
    const char* out;
    const char* resume;
    const char* sw;     /* --switch's list */
    int force;
    int64_t seeds, parallel;
    vp_cli_args cl; /* the overrides: key=value, then --backend's */
} ablate_args;

/* The switches of --switch's list, split at commas in place (buf), into sw[]; -1 when more
 * than max. */
static int split_switches(char* buf, const char** sw, int max) {
    int n = 0;
    for (char *tok = buf, *comma; tok; tok = comma ? comma + 1 : NULL) {
        comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (n >= max) return -1;
        sw[n++] = tok;
    }
    return n;
}

/* Parses argv; returns 0, or the exit code of a usage error / --help (-1: help shown). */
static int parse(int argc, char** argv, ablate_args* a) {
    memset(a, 0, sizeof *a);
    a->parallel = 1;
    const vp_cli_opt opts[] = {
        {"--switch", VP_CLI_TEXT, &a->sw, NULL, 0, 0, NULL},
        {"--seeds", VP_CLI_COUNT, &a->seeds, NULL, 1, 100000, NULL},
        {"--parallel", VP_CLI_COUNT, &a->parallel, NULL, 1, 4096, NULL},
        {"--devices", VP_CLI_TEXT, NULL, "run.devices", 0, 0, NULL},
        {"--out", VP_CLI_TEXT, &a->out, NULL, 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &a->force, NULL, 0, 0, NULL},
        {"--resume", VP_CLI_TEXT, &a->resume, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, NULL, "run.backend", 0, 0, VP_CLI_BACKENDS},
    };
    const vp_cli_spec spec = {"ablate", opts, (int)(sizeof opts / sizeof opts[0]), 1, 1, usage};
    int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    a->config = a->cl.n_positional ? a->cl.positional[0] : NULL;
    const int given = vp_cli_given(&spec, &a->cl, "--switch") || vp_cli_given(&spec, &a->cl, "--seeds");
    if (a->resume && (a->out || a->force || given)) {
        fprintf(stderr, "vulpes ablate: --resume continues its folder with its own switches and seeds; --switch, "
                "--seeds, --out and --force do not apply\n");
        return 2;
    }
    if (!a->resume && (!a->config || !a->sw || a->seeds < 1)) {
        fprintf(stderr, "vulpes ablate: %s is required\n\n", !a->config ? "CONFIG" : !a->sw ? "--switch" : "--seeds");
        usage(stderr);
        return 2;
    }
    return 0;
}

int vp_cmd_ablate(int argc, char** argv) {
    ablate_args a;
    int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;
    char sw_buf[16384];
    snprintf(sw_buf, sizeof sw_buf, "%s", a.sw ? a.sw : "");
    const char* sw[VP_ABLATE_MAX_SWITCHES];
    const int n_sw = a.resume ? 0 : split_switches(sw_buf, sw, VP_ABLATE_MAX_SWITCHES);
    if (n_sw < 0) {
        fprintf(stderr, "vulpes ablate: more than %d switches\n", VP_ABLATE_MAX_SWITCHES);
        return 2;
    }

    // the base config (the folder's on a resume) with the overrides
    vp_cli_job j;
    rc = vp_cli_job_config(&j, "ablate", a.config, a.resume, &a.cl);
    if (rc != 0) return rc;
    // the folder, the backend; Ctrl-C, SIGTERM, SIGHUP stop the runs in progress (each checkpoints)
    vp_backend* b = vp_cli_job_open(&j, a.resume, a.out, a.force);
    if (!b) return 1;
    vp_ablate_opts o = {j.dir, j.mode, sw, n_sw, a.seeds, a.parallel, stderr, &vp_cli_stop, 0, 1};
    vp_ablate_result r;
    vp_status s = vp_ablate_run(&j.cfg, b, &o, &r);
    vp_backend_free(b);
    if (s != VP_OK) {
        vp_ablate_result_free(&r);
        return vp_cli_fail("in the ablation");
    }
    vp_ablate_print(&r, stdout);
    printf("\nablation folder: %s (report.html)\n", j.dir);
    char done[64];
    snprintf(done, sizeof done, "%lld of %lld runs", (long long)r.n_done, (long long)r.n_runs);
    const int interrupted = r.interrupted;
    vp_ablate_result_free(&r);
    return vp_cli_job_end(&j, interrupted, done);
}
