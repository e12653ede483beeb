/* The checks of a resume checkpoint's restored state (vp_trainer_load, dqn_ckpt.c): the
 * host counters against the config before any tensor is read, then every restored tensor
 * (counters on the device, parameters and moments, the env state, the replay ring) before
 * anything uses it. Each refusal names the checkpoint, the tensor or field, the value and
 * what it may be. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dqn_check.h"
#include "learn/replay_impl.h"
#include "learn/train_ckpt.h"
#include "vulpes/ops.h"

/* ---- checks of a restored state: every value before anything uses it --------------------------- */

/* a * b + c into *out for a, b, c >= 0; 0 when it does not fit an int64. */
static int fits(int64_t a, int64_t b, int64_t c, int64_t* out) {
    if (b != 0 && a > (INT64_MAX - c) / b) return 0;
    *out = a * b + c;
    return 1;
}

/* The host counters (metadata): in range, and what the run's config makes of the iteration
 * count: ceil(warmup / E) warm-up steps, collect_steps and train_steps per iteration, E env
 * steps per collection step; the best iteration -1 (no Sharpe) or 0 .. iteration. */
vp_status vp_dqn_check_counters(const vp_trainer* t, const char* path, const vp_train_counters* c, int64_t best_it,
                                double best_sh) {
    const vp_config* g = &t->cfg;
    const int64_t E = g->env.n_envs, cs = g->train.collect_steps, ts = g->train.train_steps;
    const int64_t wu = (g->replay.warmup + E - 1) / E;
    // The largest iteration count whose counters all fit an int64.
    int64_t max_it = INT64_MAX / E - wu;
    if (cs > 0) max_it /= cs;
    if (ts > 0 && INT64_MAX / ts < max_it) max_it = INT64_MAX / ts;
    VP_REQUIRE(c->iteration >= 0 && c->iteration <= max_it, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.iteration = %lld (allowed 0 .. %lld)", path, (long long)c->iteration,
               (long long)max_it);
    VP_REQUIRE(c->warmup_steps == wu, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.warmup_steps = %lld, the config's replay.warmup %lld over %lld envs "
               "makes %lld", path, (long long)c->warmup_steps, (long long)g->replay.warmup, (long long)E, (long long)wu);
    int64_t want = 0;
    fits(c->iteration, cs, 0, &want);
    VP_REQUIRE(c->collect_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.collect_steps = %lld, but %lld iterations of train.collect_steps %lld "
               "make %lld", path, (long long)c->collect_steps, (long long)c->iteration, (long long)cs, (long long)want);
    fits(wu + want, E, 0, &want);
    VP_REQUIRE(c->env_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.env_steps = %lld, but (warm-up + collection steps) x %lld envs make %lld",
               path, (long long)c->env_steps, (long long)E, (long long)want);
    fits(c->iteration, ts, 0, &want);
    VP_REQUIRE(c->learner_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.learner_steps = %lld, but %lld iterations of train.train_steps %lld "
               "make %lld", path, (long long)c->learner_steps, (long long)c->iteration, (long long)ts, (long long)want);
    VP_REQUIRE(best_it >= -1 && best_it <= c->iteration, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.best_iteration = %lld (allowed -1 .. iteration %lld)", path,
               (long long)best_it, (long long)c->iteration);
    VP_REQUIRE((best_it == -1) == (isnan(best_sh) != 0), VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.best_val_sharpe = %g with vulpes.best_iteration %lld (NaN exactly when "
               "there is no best, -1)", path, best_sh, (long long)best_it);
    return VP_OK;
}

/* Downloads a tensor of backend memory into a fresh host copy (free it). */
static vp_status download_copy(vp_backend* b, const vp_tensor* src, void** out) {
    const size_t bytes = vp_tensor_bytes(src);
    *out = malloc(bytes ? bytes : 1);
    VP_REQUIRE(*out != NULL, VP_ERR_OOM, "checkpoint: out of host memory for %zu bytes", bytes);
    vp_status s = vp_download(b, *out, src, bytes);
    if (s != VP_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

/* The AdamW second moments are >= 0 (the checkpoint reader has already refused non-finite
 * values in every f32 tensor: parameters, target and both moments). One download of the
 * flat buffer; the message names the parameter holding the first bad element. */
static vp_status check_params(vp_trainer* t, const char* path) {
    const vp_model* m = &t->learner.model;
    float* h = NULL;
    VP_TRY(download_copy(t->backend, &t->learner.adam_v, (void**)&h));
    for (int i = 0; i < m->n_params; ++i) {
        const vp_param_info* p = &m->info[i];
        for (int64_t j = 0; j < p->numel; ++j) {
            const float v = h[p->offset + j];
            if (v >= 0.0f) continue;
            free(h);
            VP_FAIL(VP_ERR_PARSE, "checkpoint %s: tensor 'adam.v.%s' has %g at element %lld (must be >= 0)", path,
                    p->name, (double)v, (long long)j);
        }
    }
    free(h);
    return VP_OK;
}

/* The device counters and statistics against the host counters: adam.step = learner steps (held
 * at INT32_MAX), collect.step = policy collection steps, learner.stats' NaN-step count an
 * integer in 0 .. learner steps and its NaN flag 0 or 1. */
static vp_status check_steps(vp_trainer* t, const char* path, const vp_train_counters* c) {
    int32_t adam = 0;
    int64_t collect = 0;
    float st[VP_STAT_COUNT];
    VP_TRY(vp_download(t->backend, &adam, &t->learner.step, sizeof adam));
    VP_TRY(vp_download(t->backend, &collect, &t->collector.step, sizeof collect));
    // The statistics block is mapped memory: read in place (the load has synchronised).
    memcpy(st, t->learner.stats_host, sizeof st);
    const int64_t want = c->learner_steps < INT32_MAX ? c->learner_steps : INT32_MAX;
    VP_REQUIRE(adam == want, VP_ERR_PARSE,
               "checkpoint %s: tensor 'adam.step' = %d, but vulpes.learner_steps = %lld (must be %lld)", path, (int)adam,
               (long long)c->learner_steps, (long long)want);
    VP_REQUIRE(collect == c->collect_steps, VP_ERR_PARSE,
               "checkpoint %s: tensor 'collect.step' = %lld, but vulpes.collect_steps = %lld (must be equal)", path,
               (long long)collect, (long long)c->collect_steps);
    const float nan_steps = st[VP_STAT_NAN_STEPS], flag = st[VP_STAT_NAN];
    VP_REQUIRE(nan_steps >= 0.0f && (double)nan_steps <= (double)c->learner_steps && nan_steps == floorf(nan_steps),
               VP_ERR_PARSE, "checkpoint %s: tensor 'learner.stats' has nan_steps %g (allowed an integer 0 .. "
               "learner steps %lld)", path, (double)nan_steps, (long long)c->learner_steps);
    VP_REQUIRE(flag == 0.0f || flag == 1.0f, VP_ERR_PARSE,
               "checkpoint %s: tensor 'learner.stats' has NaN flag %g (allowed 0 or 1)", path, (double)flag);
    return VP_OK;
}

/* The env state (the env's own checks, then each window a training episode: episode_bars long,
 * t inside it) and the replay ring (its own checks, and the pending steps of each env). */
static vp_status check_env_replay(vp_trainer* t, const vp_train_counters* c) {
    vp_env* e = &t->env;
    vp_env_state h;
    VP_TRY(vp_ckpt_env_host(e->n_envs, &h));
    void* block = (void*)h.cash;
    vp_status s = vp_ckpt_check_env(e, &h);
    const int32_t eb = e->config.episode_bars;
    if (s == VP_OK) {
        const vp_action_layout lay = vp_action_layout_env();
        vp_replay_expect x = {t->market.begin, t->market.end, lay.size, c->warmup_steps + c->collect_steps,
                              c->learner_steps, h.t, h.window_end, eb};
        s = vp_replay_check_state(t->replay, &x);
        if (s != VP_OK) s = vp_error_context(s, "tensor 'replay.state'");
    }
    free(block);
    return s;
}

/* Every restored tensor against its invariants and the host counters. */
/* The learner's restored adaptive state, each value in the range its rule or update keeps it
 * in: the controls (signal bus on: learning rate and clip threshold finite and >= 0, tau and
 * gamma in [0, 1], the epsilon scale finite and >= 0, the discount scale finite and > 0, the
 * Kelly cap in [0, 1], the rules' step counter a whole number in [0, signals.every)) and
 * PopArt's mu, nu, sigma (finite, nu >= 0, sigma in [1e-4, 1e6]). */
static vp_status check_learner_state(vp_trainer* t, const char* path) {
    const vp_learner* l = &t->learner;
    if (vp_signals_bus_on(&l->cfg.signals)) {
        float c[VP_CTL_COUNT];
        VP_TRY(vp_download(t->backend, c, &l->ctl, sizeof c));
        static const char* names[VP_CTL_COUNT] = {"lr", "clip", "tau", "eps_scale", "gamma", "disc_scale",
                                                  "kelly_cap", "tick", "drift_ss", "param_ss"};
        const double every = (double)l->cfg.signals.every;
        for (int k = 0; k <= VP_CTL_TICK; ++k) {
            const double v = (double)c[k];
            const int ok = k == VP_CTL_TAU || k == VP_CTL_GAMMA || k == VP_CTL_KELLY_CAP ? v >= 0.0 && v <= 1.0
                           : k == VP_CTL_DISC_SCALE                                     ? isfinite(v) && v > 0.0
                           : k == VP_CTL_TICK ? v >= 0.0 && v < every && v == floor(v)
                                              : isfinite(v) && v >= 0.0;
            VP_REQUIRE(ok, VP_ERR_PARSE, "checkpoint %s: tensor 'learner.controls': %s = %g is out of its range",
                       path, names[k], v);
        }
    }
    if (l->cfg.popart) {
        float p[3];
        VP_TRY(vp_download(t->backend, p, &l->popart, sizeof p));
        VP_REQUIRE(isfinite(p[0]) && isfinite(p[1]) && p[1] >= 0.0f && p[2] >= 1e-4f && p[2] <= 1e6f, VP_ERR_PARSE,
                   "checkpoint %s: tensor 'learner.popart': mu %g, nu %g, sigma %g (mu and nu finite, nu >= 0, "
                   "sigma in [1e-4, 1e6])", path, (double)p[0], (double)p[1], (double)p[2]);
    }
    return VP_OK;
}

vp_status vp_dqn_check_restored(vp_trainer* t, const char* path, const vp_train_counters* c) {
    VP_TRY(check_steps(t, path, c));
    vp_status s = check_env_replay(t, c);
    if (s != VP_OK) return vp_error_context(s, "checkpoint %s", path);
    if (t->curiosity) VP_TRY(vp_curiosity_check_state(t->curiosity, c->learner_steps, path));
    VP_TRY(check_learner_state(t, path));
    return check_params(t, path);
}

vp_status vp_dqn_check_shared(vp_trainer* t, const char* path, const vp_train_counters* c) {
    VP_TRY(check_steps(t, path, c));
    VP_TRY(check_learner_state(t, path));
    return check_params(t, path);
}

/* A refused load (any error) leaves the trainer's tensors partly overwritten: free it or load
 * again. Nothing restored is used (the collector's observation) before every check passed. */
