/* The recording loop (vulpes/record.h): envs on the backend, the behaviour on the host, the
 * rows of every step kept in the dataset. Not a hot path: per step one download of the
 * observations of all envs, one upload of their actions, one download of their rewards and
 * ends, and for a policy one download of its scores. */
#include <stdlib.h>
#include <string.h>

#include "env/env_step.h"
#include "vulpes/action.h"
#include "vulpes/record.h"
#include "vulpes/rng.h"

/* Philox streams of the epsilon draws (one per env, counter = step); the random actions use
 * the env's own action streams (vp_env_random_action). */
#define RECORD_EPSILON_STREAM (1ull << 61)

/* What one recording holds on the backend and the host. */
typedef struct rec_state {
    vp_env_market market;
    vp_env env;
    vp_arena arena;
    vp_tensor act, rew, done, obs, port; /* [E, 4] i32, [E] f32, [E] f32, [E] i32, [E, P] f32 */
    vp_policy_work* work;                /* the policy's workspace (policy behaviours) */
    float* scores;                       /* [E, A] host: the policy's scores of one step */
    signed char* dir;                    /* [span length] host: ma_cross's direction at each bar */
} rec_state;

static void rec_free(rec_state* s, const vp_behaviour* beh) {
    if (beh->kind == VP_BEHAVIOUR_POLICY) vp_policy_work_free(beh->policy, s->work);
    free(s->scores);
    free(s->dir);
    vp_env_free(&s->env);
    vp_env_market_free(&s->market);
    vp_arena_free(&s->arena);
}

/* Checks the settings against the data and the behaviour. */
static vp_status check_args(const vp_train_data* d, const vp_tensor* features, const vp_behaviour* beh,
                            const vp_record_cfg* c) {
    VP_REQUIRE(c->steps >= 1 && c->n_envs >= 1 && c->n_envs <= INT32_MAX, VP_ERR_INVALID_ARG,
               "vp_record_run: %lld steps of %lld envs (both >= 1)", (long long)c->steps, (long long)c->n_envs);
    VP_REQUIRE(c->span.begin >= 0 && c->span.begin < c->span.end && c->span.end <= d->bars.n, VP_ERR_INVALID_ARG,
               "vp_record_run: span [%lld, %lld) is not inside the data's %lld bars", (long long)c->span.begin,
               (long long)c->span.end, (long long)d->bars.n);
    VP_REQUIRE(beh->kind >= 0 && beh->kind < VP_BEHAVIOUR_KIND_COUNT && beh->epsilon >= 0.0 && beh->epsilon <= 1.0 &&
                   beh->name[0] != '\0',
               VP_ERR_INVALID_ARG, "vp_record_run: behaviour '%s' (kind %d, epsilon %g) is not a parsed behaviour",
               beh->name, (int)beh->kind, beh->epsilon);
    if (beh->kind == VP_BEHAVIOUR_MA_CROSS)
        VP_REQUIRE(beh->fast >= 1 && beh->fast < beh->slow && beh->size >= 0 && beh->size < VP_ENV_SIZE_CHOICES,
                   VP_ERR_INVALID_ARG, "vp_record_run: ma_cross fast %d, slow %d, size %d", beh->fast, beh->slow,
                   beh->size);
    if (beh->kind == VP_BEHAVIOUR_POLICY) {
        VP_REQUIRE(beh->policy != NULL && features != NULL, VP_ERR_INVALID_ARG,
                   "vp_record_run: a policy behaviour needs its policy and the feature matrix");
        VP_TRY(vp_policy_check(beh->policy));
    }
    return VP_OK;
}

/* The market over the span, the envs, their tensors, and what the behaviour needs. */
static vp_status rec_init(rec_state* s, vp_backend* b, const vp_train_data* d, const vp_tensor* features,
                          const vp_behaviour* beh, const vp_record_cfg* c) {
    const int64_t E = c->n_envs;
    vp_env_market_desc md = {d->bars.n, d->bars.open, d->bars.high, d->bars.low, d->bars.close, d->atr,
                             c->span.begin, c->span.end, features, d->bars.spread,
                             vp_instrument_spread(&c->instrument), d->periods_per_year};
    VP_TRY(vp_env_market_init(&s->market, b, &md));
    vp_status st = vp_env_init(&s->env, b, &s->market, &c->instrument, &c->env, E);
    if (st != VP_OK) return vp_error_context(st, "recording envs (env.episode_bars %lld in a span of %lld bars)",
                                             (long long)c->env.episode_bars, (long long)vp_span_len(c->span));
    // the step's tensors in the backend's memory
    VP_TRY(vp_arena_init(&s->arena, b, vp_backend_native_mem(b), (size_t)E * 64 + 8 * 256));
    const int64_t sa[2] = {E, VP_ENV_BRANCHES}, sp[2] = {E, VP_ENV_PORTFOLIO}, s1[1] = {E};
    VP_TRY(vp_arena_tensor(&s->arena, "actions", VP_I32, 2, sa, &s->act, NULL));
    VP_TRY(vp_arena_tensor(&s->arena, "reward", VP_F32, 1, s1, &s->rew, NULL));
    VP_TRY(vp_arena_tensor(&s->arena, "done", VP_F32, 1, s1, &s->done, NULL));
    VP_TRY(vp_arena_tensor(&s->arena, "obs_bar", VP_I32, 1, s1, &s->obs, NULL));
    VP_TRY(vp_arena_tensor(&s->arena, "portfolio", VP_F32, 2, sp, &s->port, NULL));
    // the behaviour's own: ma_cross's direction at every bar of the span, a policy's workspace
    if (beh->kind == VP_BEHAVIOUR_MA_CROSS) {
        const int64_t n = vp_span_len(c->span);
        s->dir = (signed char*)malloc((size_t)n);
        VP_REQUIRE(s->dir != NULL, VP_ERR_OOM, "vp_record_run: out of host memory for %lld bars", (long long)n);
        for (int64_t k = 0; k < n; ++k)
            s->dir[k] = (signed char)vp_ma_cross_dir(d->bars.close, c->span.begin + k, beh->fast, beh->slow);
    }
    if (beh->kind == VP_BEHAVIOUR_POLICY) {
        VP_TRY(vp_policy_work_init(beh->policy, E, &s->work));
        s->scores = (float*)malloc((size_t)E * (size_t)beh->policy->layout.n_heads * sizeof *s->scores);
        VP_REQUIRE(s->scores != NULL, VP_ERR_OOM, "vp_record_run: out of host memory for the scores");
        s->env.size_scale = vp_policy_size_scale(beh->policy, s->work);
    }
    return VP_OK;
}

/* The behaviour's own choice for env i at step t from its observation (bar) into own [4]. */
static void own_action(const rec_state* s, const vp_behaviour* beh, const vp_record_cfg* c, int64_t t, int64_t i,
                       int32_t bar, int32_t* own) {
    if (beh->kind == VP_BEHAVIOUR_RANDOM) {
        vp_env_random_action(c->seed, (uint64_t)t, i, own);
    } else if (beh->kind == VP_BEHAVIOUR_MA_CROSS) {
        own[0] = s->dir[bar - c->span.begin];
        own[1] = beh->size;
        own[2] = own[3] = 0;
    } else {
        const vp_action_layout l = vp_action_layout_env();
        vp_action_greedy(&l, s->scores + i * l.n_heads, own);
    }
}

/* The actions and logp of step t into rows t of out from the observations in rows t. */
static vp_status decide(rec_state* s, vp_backend* b, const vp_tensor* features, const vp_behaviour* beh,
                        const vp_record_cfg* c, int64_t t, vp_offline_data* out) {
    const int64_t E = c->n_envs;
    if (beh->kind == VP_BEHAVIOUR_POLICY) {
        const vp_policy* p = beh->policy;
        vp_tensor enc, q;
        VP_TRY(vp_policy_encode(p, s->work, features, &s->obs, E, &enc));
        VP_TRY(vp_policy_score(p, s->work, &enc, &s->port, E, &q));
        VP_TRY(vp_download(b, s->scores, &q, (size_t)E * (size_t)p->layout.n_heads * sizeof(float)));
    }
    for (int64_t i = 0; i < E; ++i) {
        int32_t own[VP_ENV_BRANCHES];
        int32_t* a = out->action + (t * E + i) * VP_ENV_BRANCHES;
        own_action(s, beh, c, t, i, out->bar[t * E + i], own);
        memcpy(a, own, sizeof own);
        const int uniform = beh->kind == VP_BEHAVIOUR_RANDOM;
        if (!uniform && beh->epsilon > 0.0 &&
            vp_rng_uniform(c->seed, RECORD_EPSILON_STREAM + (uint64_t)i, (uint64_t)t) < beh->epsilon)
            vp_env_random_action(c->seed, (uint64_t)t, i, a);
        out->logp[t * E + i] = vp_behaviour_logp(own, a, beh->epsilon, uniform);
    }
    return VP_OK;
}

/* Downloads the observation of every env into rows t of out. */
static vp_status observe(rec_state* s, vp_backend* b, int64_t t, vp_offline_data* out) {
    const int64_t E = out->n_envs;
    VP_TRY(vp_download(b, out->bar + t * E, &s->obs, (size_t)E * sizeof(int32_t)));
    return vp_download(b, out->portfolio + t * E * VP_ENV_PORTFOLIO, &s->port,
                       (size_t)E * VP_ENV_PORTFOLIO * sizeof(float));
}

/* Every step: decide, upload the actions, step, keep the rewards, ends and next observations. */
static vp_status record_steps(rec_state* s, vp_backend* b, const vp_tensor* features, const vp_behaviour* beh,
                              const vp_record_cfg* c, vp_offline_data* out) {
    const int64_t E = c->n_envs;
    VP_TRY(vp_env_reset(&s->env, &s->obs, &s->port));
    VP_TRY(observe(s, b, 0, out));
    for (int64_t t = 0; t < c->steps; ++t) {
        VP_TRY(decide(s, b, features, beh, c, t, out));
        VP_TRY(vp_upload(b, &s->act, out->action + t * E * VP_ENV_BRANCHES, (size_t)E * VP_ENV_BRANCHES * 4));
        VP_TRY(vp_env_step(&s->env, &s->act, &s->rew, &s->done, &s->obs, &s->port));
        VP_TRY(vp_download(b, out->reward + t * E, &s->rew, (size_t)E * sizeof(float)));
        VP_TRY(vp_download(b, out->done + t * E, &s->done, (size_t)E * sizeof(float)));
        VP_TRY(observe(s, b, t + 1, out));
    }
    return VP_OK;
}

vp_status vp_record_run(vp_backend* b, const vp_train_data* d, const vp_tensor* features, const vp_behaviour* beh,
                        const vp_record_cfg* c, vp_offline_data* out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_record_run: out is NULL");
    memset(out, 0, sizeof *out);
    VP_REQUIRE(b != NULL && d != NULL && beh != NULL && c != NULL, VP_ERR_INVALID_ARG,
               "vp_record_run: NULL argument");
    VP_TRY(check_args(d, features, beh, c));
    VP_TRY(vp_offline_alloc(out, c->steps, c->n_envs, VP_ENV_PORTFOLIO));
    out->span = c->span;
    out->seed = c->seed;
    snprintf(out->behaviour, sizeof out->behaviour, "%s", beh->name);
    vp_status st = vp_data_record_make(d, d->split.train, &out->data);
    rec_state s;
    memset(&s, 0, sizeof s);
    if (st == VP_OK) st = rec_init(&s, b, d, features, beh, c);
    if (st == VP_OK) st = record_steps(&s, b, features, beh, c, out);
    rec_free(&s, beh);
    if (st != VP_OK) {
        vp_offline_free(out);
        return vp_error_context(st, "recording %s over bars [%lld, %lld)", beh->name, (long long)c->span.begin,
                                (long long)c->span.end);
    }
    return VP_OK;
}
