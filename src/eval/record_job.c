/* The `vulpes record` job (vulpes/record.h): the request checked before anything is read, the
 * config and data (a checkpoint's, checked against its record, as `vulpes backtest` reads
 * them), the span, the behaviour, the recording and the dataset file. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/algo.h"
#include "vulpes/backtest.h"
#include "vulpes/record.h"
#include "vulpes/train.h"

/* Everything a job holds, freed by job_free. */
typedef struct job_state {
    vp_config cfg;
    vp_data_record rec; /* the checkpoint's record of its training data */
    int has_rec;
    vp_train_data td;   /* bars, features, ATR, split */
    vp_algo algo;       /* a checkpoint's policy: an inference instance of its algorithm */
    vp_policy pol;
    vp_behaviour beh;
    vp_offline_data data;
} job_state;

static void job_free(job_state* j) {
    vp_offline_free(&j->data);
    vp_algo_free(&j->algo);
    vp_train_data_free(&j->td);
}

/* The request alone: one behaviour, a config where one is needed, epsilon, the output. */
static vp_status check_request(const vp_record_job* job, job_state* j) {
    VP_REQUIRE((job->checkpoint != NULL) != (job->policy != NULL), VP_ERR_INVALID_ARG,
               "give one behaviour: --checkpoint CK or --policy NAME[:opts]");
    VP_REQUIRE(job->policy == NULL || job->config != NULL, VP_ERR_INVALID_ARG,
               "--policy needs CONFIG: the data, the split, the instrument and the episodes");
    VP_REQUIRE(job->checkpoint == NULL || job->config == NULL, VP_ERR_INVALID_ARG,
               "with --checkpoint the config comes from the checkpoint: give no CONFIG (%s)", job->config);
    VP_REQUIRE(job->epsilon >= 0.0 && job->epsilon <= 1.0, VP_ERR_INVALID_ARG,
               "--epsilon %g is not a probability in 0..1", job->epsilon);
    VP_REQUIRE(job->out != NULL && job->out[0] != '\0', VP_ERR_INVALID_ARG, "--out FILE is required");
    VP_REQUIRE(job->force || access(job->out, F_OK) != 0, VP_ERR_INVALID_ARG,
               "--out %s exists: give --force to replace it", job->out);
    VP_REQUIRE(job->span == NULL || strcmp(job->span, "train") == 0 || strcmp(job->span, "val") == 0 ||
                   strcmp(job->span, "test") == 0,
               VP_ERR_INVALID_ARG, "--span '%s' is not train, val or test", job->span);
    if (job->policy) {
        VP_TRY(vp_behaviour_parse(job->policy, &j->beh));
        VP_TRY(vp_behaviour_set_epsilon(&j->beh, job->epsilon));
    }
    return VP_OK;
}

/* A checkpoint's config and its recorded training data, loaded and checked unchanged. */
static vp_status load_checkpoint_data(const vp_record_job* job, job_state* j) {
    VP_TRY(vp_backtest_checkpoint_config(job->checkpoint, job->overrides, job->n_overrides, "a recording", &j->cfg,
                                         &j->rec, &j->has_rec));
    VP_REQUIRE(j->has_rec && j->rec.kind != VP_DATA_GIVEN, VP_ERR_INVALID_ARG,
               "checkpoint %s has no record of a file or synthetic market it was trained on: a dataset must name "
               "its bars", job->checkpoint);
    snprintf(j->cfg.data.path, sizeof j->cfg.data.path, "%s", j->rec.source);
    if (j->rec.kind == VP_DATA_FILE && access(j->rec.source, R_OK) != 0)
        VP_FAIL(VP_ERR_IO, "the checkpoint's training data %s cannot be read (%s)", j->rec.source, strerror(errno));
    VP_TRY(vp_train_data_load(&j->td, &j->cfg));
    vp_data_record now;
    VP_TRY(vp_data_record_identify(j->td.source, j->td.source_bytes, j->td.source_hash, &now));
    VP_REQUIRE(vp_data_record_same(&j->rec, &now) && j->td.bars.n == j->rec.n_bars, VP_ERR_INVALID_ARG,
               "the checkpoint's training data %s has changed since training (now %lld bars, %lld bytes, "
               "xxh64:%016llx; then %lld bars, %lld bytes, xxh64:%016llx)", j->rec.source, (long long)j->td.bars.n,
               (long long)now.bytes, (unsigned long long)now.hash, (long long)j->rec.n_bars,
               (long long)j->rec.bytes, (unsigned long long)j->rec.hash);
    return VP_OK;
}

/* The checkpoint's greedy policy on backend b as the behaviour. */
static vp_status load_checkpoint_policy(vp_backend* b, const vp_record_job* job, job_state* j) {
    VP_TRY(vp_algo_create(&j->algo, &j->cfg, b, &j->td, VP_ALGO_INFER));
    VP_TRY(vp_algo_load_params(&j->algo, job->checkpoint, VP_PARAMS_ONLINE));
    VP_TRY(vp_algo_policy(&j->algo, VP_PARAMS_ONLINE, &j->pol));
    return vp_behaviour_policy(&j->pol, job->checkpoint, job->epsilon, &j->beh);
}

/* The recording's settings: the span, the seed (the env's episodes derived from it as training
 * derives them), steps, envs, instrument and episodes of the config. */
static vp_status settings(const vp_record_job* job, job_state* j, vp_record_cfg* c, const char** span_name) {
    *span_name = job->span ? job->span : "train";
    const vp_split* sp = &j->td.split;
    c->span = strcmp(*span_name, "val") == 0 ? sp->val : strcmp(*span_name, "test") == 0 ? sp->test : sp->train;
    VP_REQUIRE(vp_span_len(c->span) > 0, VP_ERR_INVALID_ARG, "the %s span of the split is empty", *span_name);
    c->seed = job->has_seed ? job->seed : (uint64_t)j->cfg.run.seed;
    vp_config cs = j->cfg;
    cs.run.seed = (int64_t)(c->seed & INT64_MAX);
    vp_train_parts parts;
    VP_TRY(vp_train_parts_make(&cs, j->td.n_features, &parts));
    c->instrument = parts.instrument;
    c->env = parts.env;
    c->steps = job->steps > 0 ? job->steps : VP_RECORD_DEFAULT_STEPS;
    c->n_envs = job->n_envs > 0 ? job->n_envs : VP_RECORD_DEFAULT_ENVS;
    return VP_OK;
}

vp_status vp_record_job_run(vp_backend* b, const vp_record_job* job, vp_record_report* out) {
    VP_REQUIRE(b != NULL && job != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_record_job_run: NULL argument");
    memset(out, 0, sizeof *out);
    job_state j;
    memset(&j, 0, sizeof j);
    vp_record_cfg c;
    memset(&c, 0, sizeof c);
    vp_status s = check_request(job, &j);
    if (s == VP_OK && job->checkpoint) {
        s = load_checkpoint_data(job, &j);
        if (s == VP_OK) s = load_checkpoint_policy(b, job, &j);
    } else if (s == VP_OK) {
        s = vp_config_resolve(&j.cfg, job->config, job->n_overrides, job->overrides);
        if (s == VP_OK) s = vp_train_data_load(&j.td, &j.cfg);
    }
    const char* span_name = NULL;
    if (s == VP_OK) s = settings(job, &j, &c, &span_name);
    if (s == VP_OK) s = vp_record_run(b, &j.td, job->checkpoint ? j.algo.features : NULL, &j.beh, &c, &j.data);
    if (s == VP_OK) s = vp_offline_save(&j.data, job->out);
    if (s == VP_OK) {
        out->totals = vp_record_totals_of(&j.data);
        snprintf(out->behaviour, sizeof out->behaviour, "%s", j.data.behaviour);
        out->data = j.data.data;
        out->span_name = span_name;
        out->span = c.span;
        out->seed = c.seed;
        out->steps = c.steps;
        out->n_envs = c.n_envs;
        out->checked_against_checkpoint = job->checkpoint != NULL;
    }
    job_free(&j);
    return s;
}
