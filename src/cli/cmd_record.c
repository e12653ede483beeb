/* `vulpes record CONFIG [key=value ...] (--checkpoint CK | --policy NAME[:opts]) --out FILE [--epsilon E]
 * [--steps T] [--envs E] [--span train|val|test] [--seed S] [--force] [--backend B]`: parses the line
 * with the shared parser (cli_args.h), runs vp_record_job_run and prints what it wrote. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/record.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes record CONFIG [key=value ...] --policy NAME[:opts] --out FILE [options]\n"
            "       vulpes record --checkpoint CK [KEY=VALUE ...] --out FILE [options]\n\n"
            "Steps envs of a behaviour policy through the environment over one span of the data and writes\n"
            "every transition (decision bar, portfolio, action, reward, end of episode, the behaviour's\n"
            "log-probability) to FILE, one safetensors file with the record of the data it was made on: an\n"
            "offline dataset (docs/offline.md).\n\n"
            "  --policy NAME    random: every branch uniform (logp -log 108)\n"
            "                   ma_cross:fast=N,slow=M[,size=I]: long when the SMA of the last N closes is\n"
            "                   above that of the last M, short when below, flat when equal or before M bars;\n"
            "                   size choice I (0..3 = 0.25..1 x max_position, default 3), no take-profit or stop\n"
            "  --checkpoint CK  a trained checkpoint's greedy policy; the config and the data come from it\n"
            "                   (the data must match its record); KEY=VALUE then only as for vulpes backtest\n"
            "  --epsilon E      with probability E at each step a uniform random action (default 0); logp is\n"
            "                   the log of the mixture's probability of the action taken\n"
            "  --out FILE       the dataset; an existing FILE is refused unless --force\n"
            "  --steps T        steps of every env (default %d)\n"
            "  --envs E         environments stepped together (default %d)\n"
            "  --span S         train, val or test span of the config's split (default train)\n"
            "  --seed S         seed of the behaviour's draws and the episodes' starts (default run.seed)\n"
            "  --force          replace an existing FILE\n"
            "  --backend B      where the envs step: cpu, cuda or auto (default auto); both record the same rows\n",
            VP_RECORD_DEFAULT_STEPS, VP_RECORD_DEFAULT_ENVS);
}

/* Command-line choices. */
typedef struct record_args {
    vp_record_job job;   /* the job as given */
    const char* backend; /* --backend */
    vp_cli_args cl;      /* the parsed line: CONFIG and the overrides */
} record_args;

/* Parses argv with the shared parser; returns 0, or the exit code of a usage error or --help (-1). */
static int parse(int argc, char** argv, record_args* a) {
    memset(a, 0, sizeof *a);
    vp_record_job* job = &a->job;
    a->backend = "auto";
    const char* epsilon = NULL;
    int64_t seed = -1;
    const vp_cli_opt opts[] = {
        {"--checkpoint", VP_CLI_TEXT, &job->checkpoint, NULL, 0, 0, NULL},
        {"--policy", VP_CLI_TEXT, &job->policy, NULL, 0, 0, NULL},
        {"--out", VP_CLI_TEXT, &job->out, NULL, 0, 0, NULL},
        {"--epsilon", VP_CLI_TEXT, &epsilon, NULL, 0, 0, NULL},
        {"--steps", VP_CLI_COUNT, &job->steps, NULL, 1, INT32_MAX, NULL},
        {"--envs", VP_CLI_COUNT, &job->n_envs, NULL, 1, INT32_MAX, NULL},
        {"--span", VP_CLI_CHOICE, &job->span, NULL, 0, 0, "train|val|test"},
        {"--seed", VP_CLI_COUNT, &seed, NULL, 0, INT64_MAX, NULL},
        {"--force", VP_CLI_SWITCH, &job->force, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, &a->backend, NULL, 0, 0, VP_CLI_BACKENDS},
    };
    const vp_cli_spec spec = {"record", opts, (int)(sizeof opts / sizeof opts[0]), 1, 1, usage};
    const int rc = vp_cli_parse(&spec, argc, argv, &a->cl);
    if (rc == VP_CLI_HELP) return -1;
    if (rc != 0) return rc;
    job->config = a->cl.n_positional ? a->cl.positional[0] : NULL;
    job->overrides = a->cl.over;
    job->n_overrides = a->cl.n_over;
    job->has_seed = seed >= 0;
    job->seed = job->has_seed ? (uint64_t)seed : 0;
    if (epsilon) {
        char* end = NULL;
        job->epsilon = strtod(epsilon, &end);
        if (end == epsilon || *end != '\0' || !(job->epsilon >= 0.0 && job->epsilon <= 1.0)) {
            fprintf(stderr, "vulpes record: --epsilon takes a probability in 0..1, got '%s'\n", epsilon);
            return 2;
        }
    }
    if (!job->checkpoint == !job->policy || !job->out) {
        fprintf(stderr, "vulpes record: give --out FILE and one of --checkpoint CK and --policy NAME\n\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

int vp_cmd_record(int argc, char** argv) {
    record_args a;
    const int rc = parse(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;
    vp_backend* b = vp_cli_backend(a.backend);
    if (!b) return 1;
    vp_record_report r;
    vp_status s = vp_record_job_run(b, &a.job, &r);
    if (s == VP_OK) {
        char src[1200], iv[64];
        printf("behaviour: %s (seed %llu)\n", r.behaviour, (unsigned long long)r.seed);
        printf("data: %s, %lld bars %s apart%s\n", vp_data_record_describe(&r.data, src, sizeof src),
               (long long)r.data.n_bars, vp_interval_words(r.data.interval_s, iv, sizeof iv),
               r.checked_against_checkpoint ? " (the checkpoint's training data, unchanged)" : "");
        printf("span: %s, bars [%lld, %lld)\n", r.span_name, (long long)r.span.begin, (long long)r.span.end);
        printf("recorded %lld rows (%lld steps x %lld envs) on %s: %lld episodes ended, mean reward %.6g\n",
               (long long)r.totals.rows, (long long)r.steps, (long long)r.n_envs, vp_backend_name(b),
               (long long)r.totals.episodes, r.totals.mean_reward);
        printf("the dataset records its data (vulpes.data.*): it is refused against other bars\n");
        printf("wrote %s\n", a.job.out);
    }
    vp_backend_free(b);
    return s == VP_OK ? 0 : vp_cli_fail("in the recording");
}
