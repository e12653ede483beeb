/* The training iteration: collection (vp_collector_collect: the span encoded once where that
 * is fewer rows, then head-only steps), then learner steps (sample, curiosity's forward-model
 * step when on, taus, step, priorities), issued as ops only and replayed as one graph; the warm-up; statistics. */
#include <math.h>
#include <string.h>

#include "learn/collect_math.h"
#include "vulpes/dqn.h"

vp_status vp_trainer_iteration_body(vp_backend* b, void* ctx) {
    (void)b;
    vp_trainer* t = (vp_trainer*)ctx;
    const int per = t->parts.replay.prioritized;
    // Collection: every env steps collect_steps times under this iteration's parameters.
    VP_TRY(vp_collector_collect(&t->collector));
    // Learning: sample, fresh taus, one step (Polyak included), new priorities.
    for (int64_t k = 0; k < t->cfg.train.train_steps; ++k) {
        VP_TRY(vp_replay_sample(t->replay, &t->rbatch));
        if (t->curiosity) VP_TRY(vp_curiosity_learn(t->curiosity, &t->batch, k == 0));
        VP_TRY(vp_learner_draw_taus(&t->learner, &t->batch));
        VP_TRY(vp_learner_step(&t->learner, &t->batch, per ? &t->priorities : NULL));
        if (per) VP_TRY(vp_replay_update_priorities(t->replay, &t->indices, &t->priorities));
    }
    return VP_OK;
}

vp_status vp_trainer_warmup(vp_trainer* t) {
    VP_REQUIRE(t != NULL && t->replay != NULL, VP_ERR_INVALID_ARG, "vp_trainer_warmup: trainer is not initialised");
    VP_REQUIRE(t->count.warmup_steps == 0 && t->count.iteration == 0, VP_ERR_STATE,
               "vp_trainer_warmup: the run has already started");
    const int64_t E = t->cfg.env.n_envs;
    const int64_t steps = (t->cfg.replay.warmup + E - 1) / E;
    // Random actions, one Philox counter per step.
    for (int64_t k = 0; k < steps; ++k) VP_TRY(vp_collector_random_step(&t->collector, (uint64_t)k));
    t->count.warmup_steps = steps;
    t->count.env_steps += steps * E;
    return vp_backend_sync(t->backend);
}

/* Runs, once and eagerly, every op shape of an iteration whose outputs are scratch only
 * (the policy's forward, the span encoding on the encode-once path; curiosity's GEMMs and
 * batch encoding; the learner's forward, loss and backward, which write activations,
 * loss buffers and gradients that the next step overwrites), so that first-use set-up (GEMM
 * plans) happens before the capture. The trained state is left as it was. */
static vp_status prime(vp_trainer* t) {
    vp_collector* c = &t->collector;
    VP_TRY(vp_collector_score(c));
    if (t->curiosity) VP_TRY(vp_curiosity_prime(t->curiosity, &t->batch));
    if (t->cfg.train.train_steps == 0) return VP_OK;
    VP_TRY(vp_learner_run_phase(&t->learner, VP_PHASE_FORWARD, &t->batch, NULL));
    VP_TRY(vp_learner_run_phase(&t->learner, VP_PHASE_LOSS, &t->batch, NULL));
    VP_TRY(vp_learner_run_phase(&t->learner, VP_PHASE_BACKWARD, &t->batch, NULL));
    return vp_backend_sync(t->backend);
}

vp_status vp_trainer_iterate(vp_trainer* t, int64_t n) {
    VP_REQUIRE(t != NULL && t->replay != NULL, VP_ERR_INVALID_ARG, "vp_trainer_iterate: trainer is not initialised");
    VP_REQUIRE(n >= 0, VP_ERR_INVALID_ARG, "vp_trainer_iterate: n = %lld", (long long)n);
    const int64_t E = t->cfg.env.n_envs, cs = t->cfg.train.collect_steps, ts = t->cfg.train.train_steps;
    // Every counter after n more iterations must fit an int64.
    const struct { const char* name; int64_t now, per; } cnt[] = {
        {"iteration", t->count.iteration, 1}, {"collect_steps", t->count.collect_steps, cs},
        {"env_steps", t->count.env_steps, cs * E}, {"learner_steps", t->count.learner_steps, ts}};
    for (size_t k = 0; k < sizeof cnt / sizeof cnt[0]; ++k)
        VP_REQUIRE(cnt[k].now >= 0 && (cnt[k].per == 0 || n <= (INT64_MAX - cnt[k].now) / cnt[k].per), VP_ERR_STATE,
                   "vp_trainer_iterate: %lld more iterations take the counter %s from %lld past 2^63 - 1 (%lld per "
                   "iteration)", (long long)n, cnt[k].name, (long long)cnt[k].now, (long long)cnt[k].per);
    // One capture (after a priming pass), then one launch per iteration.
    if (!t->graph && n > 0) {
        VP_TRY(prime(t));
        VP_TRY(vp_graph_capture(t->backend, vp_trainer_iteration_body, t, &t->graph));
    }
    for (int64_t i = 0; i < n; ++i) {
        vp_status s = vp_graph_launch(t->backend, t->graph);
        if (s != VP_OK) return vp_error_context(s, "training iteration %lld", (long long)(t->count.iteration + 1));
        t->count.iteration += 1;
        t->count.collect_steps += cs;
        t->count.env_steps += cs * E;
        t->count.learner_steps += ts;
    }
    return VP_OK;
}

vp_status vp_trainer_stats(vp_trainer* t, vp_train_stats* out) {
    VP_REQUIRE(t != NULL && out != NULL && t->replay != NULL, VP_ERR_INVALID_ARG, "vp_trainer_stats: NULL argument");
    memset(out, 0, sizeof *out);
    VP_TRY(vp_backend_sync(t->backend));
    // The learner's block is mapped memory: read in place after the wait.
    memcpy(out->learner, t->learner.stats_host, sizeof out->learner);
    vp_replay_stats rs;
    VP_TRY(vp_replay_stats_read(t->replay, &rs));
    out->beta = rs.beta;
    out->replay_size = rs.size;
    out->epsilon = vp_collect_epsilon(&t->parts.collect, t->count.collect_steps);
    // the epsilon rule's factor, as the act kernel applies it (the bus mirrors the control)
    if (t->collector.eps_scale.data)
        out->epsilon = vp_collect_eps_scaled(out->epsilon, t->learner.signals_host[VP_SIG_EPS_SCALE]);
    out->curious = t->curiosity != NULL;
    if (t->curiosity) VP_TRY(vp_curiosity_stats_read(t->curiosity, out->curiosity));
    return VP_OK;
}

vp_status vp_trainer_validate(vp_trainer* t, const vp_tensor* params, vp_eval_result* out) {
    VP_REQUIRE(t != NULL && t->val != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_trainer_validate: NULL argument");
    const vp_policy pol = vp_model_rollout_policy(&t->learner.model, params ? params : &t->learner.model.params);
    VP_TRY(vp_validator_run(t->val, &pol, out));
    return vp_backend_sync(t->backend);
}
