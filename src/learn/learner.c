/* The learner: configuration, set-up (every buffer taken once) and the step, written
 * against the op interface, the model and the loss kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/learner_internal.h"
#include "learn/signal_learn.h"

vp_learner_cfg vp_learner_cfg_default(void) {
    vp_learner_cfg c;
    memset(&c, 0, sizeof c);
    c.model = vp_model_cfg_default();
    c.batch = 8192;
    c.n_taus = 64;
    c.n_target_taus = 64;
    c.kappa = 1.0f;
    c.adamw.lr = 1e-4f;
    c.adamw.beta1 = 0.9f;
    c.adamw.beta2 = 0.999f;
    c.adamw.eps = 1.5e-4f;
    c.adamw.weight_decay = 0.0f;
    c.clip_norm = 10.0f;
    c.polyak_tau = 0.005f;
    c.seed = 1;
    c.popart_beta = 3e-4f;
    c.signals = vp_signals_cfg_default();
    return c;
}

vp_status vp_learner_cfg_check(const vp_learner_cfg* c) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_learner_cfg_check: cfg is NULL");
    VP_TRY(vp_model_cfg_check(&c->model));
    VP_REQUIRE(c->batch >= 1, VP_ERR_INVALID_ARG, "learner config: batch = %lld must be positive", (long long)c->batch);
    VP_REQUIRE(c->n_taus >= 0 && c->n_taus <= VP_LOSS_MAX_TAUS && c->n_target_taus >= 0 &&
                   c->n_target_taus <= VP_LOSS_MAX_TAUS && (c->n_taus == 0) == (c->n_target_taus == 0),
               VP_ERR_INVALID_ARG,
               "learner config: n_taus = %d and n_target_taus = %d must both lie in [1, %d] (or both be 0)",
               c->n_taus, c->n_target_taus, VP_LOSS_MAX_TAUS);
    VP_REQUIRE(c->model.risk_budget == 0.0f || c->n_taus > 0, VP_ERR_INVALID_ARG,
               "learner config: model risk_budget = %g reads the IQN quantiles, but n_taus is 0",
               (double)c->model.risk_budget);
    VP_REQUIRE(c->kappa > 0.0f && isfinite(c->kappa), VP_ERR_INVALID_ARG, "learner config: kappa = %g must be positive",
               (double)c->kappa);
    VP_REQUIRE(c->adamw.lr >= 0.0f && isfinite(c->adamw.lr), VP_ERR_INVALID_ARG, "learner config: lr = %g",
               (double)c->adamw.lr);
    VP_REQUIRE(c->adamw.beta1 >= 0.0f && c->adamw.beta1 < 1.0f && c->adamw.beta2 >= 0.0f && c->adamw.beta2 < 1.0f,
               VP_ERR_INVALID_ARG, "learner config: betas (%g, %g) must lie in [0, 1)", (double)c->adamw.beta1,
               (double)c->adamw.beta2);
    VP_REQUIRE(c->adamw.eps > 0.0f, VP_ERR_INVALID_ARG, "learner config: eps = %g must be positive",
               (double)c->adamw.eps);
    VP_REQUIRE(c->adamw.weight_decay >= 0.0f, VP_ERR_INVALID_ARG, "learner config: weight_decay = %g < 0",
               (double)c->adamw.weight_decay);
    VP_REQUIRE(c->clip_norm > 0.0f, VP_ERR_INVALID_ARG, "learner config: clip_norm = %g must be positive",
               (double)c->clip_norm);
    VP_REQUIRE(c->polyak_tau >= 0.0f && c->polyak_tau <= 1.0f, VP_ERR_INVALID_ARG,
               "learner config: polyak_tau = %g must lie in [0, 1]", (double)c->polyak_tau);
    VP_REQUIRE(c->popart == 0 || c->popart == 1, VP_ERR_INVALID_ARG, "learner config: popart = %d must be 0 or 1",
               c->popart);
    VP_REQUIRE(!c->popart || (c->popart_beta > 0.0f && c->popart_beta <= 1.0f), VP_ERR_INVALID_ARG,
               "learner config: popart_beta = %g must lie in (0, 1]", (double)c->popart_beta);
    VP_REQUIRE(!c->popart || c->model.risk_budget == 0.0f, VP_ERR_INVALID_ARG,
               "learner config: popart and model risk_budget cannot be on together (the budget is in reward units, "
               "PopArt's quantiles in normalised units)");
    VP_REQUIRE(!c->popart || !c->signals.kelly, VP_ERR_INVALID_ARG,
               "learner config: popart and the signals' kelly rule cannot be on together (the rule reads the edge "
               "and variance of the greedy return from the C51 distribution, in PopArt's normalised units)");
    return vp_signals_cfg_check(&c->signals);
}

/* Bytes of the learner's arena: target and moments, counters, loss scratch and one batch. */
static size_t arena_bytes(const vp_learner* l) {
    const vp_learner_cfg* c = &l->cfg;
    const int64_t B = c->batch, A = vp_model_cfg_actions(&c->model), Z = c->model.n_atoms;
    const int64_t nb = c->model.n_branches, P = c->model.n_portfolio;
    const int64_t floats = 3 * l->model.n_weights + 2 + B * nb * Z + 2 * B + B * A * Z + B * c->n_taus * A +
                           2 * B * P + 3 * B + B * (c->n_taus + c->n_target_taus);
    const int64_t ints = 1 + B * nb + 2 * B + B * nb;
    const int64_t mods = (c->model.stoch_depth > 0.0f ? B : 0) + (c->model.q_denoise ? B + B * A : 0) +
                         (c->model.risk_budget > 0.0f ? 2 * B : 0);
    const int64_t sig = vp_signals_arena_floats(c, l->model.n_weights);
    return (size_t)(floats + ints + mods + sig) * 4 + (36 + (mods ? 5 : 0)) * 256;
}

/* Takes an f32 (or i32) tensor of up to three extents from the learner's arena. */
static vp_status take(vp_arena* a, const char* name, vp_dtype dt, int64_t d0, int64_t d1, int64_t d2, vp_tensor* t) {
    int64_t shape[3] = {d0, d1, d2};
    int ndim = d2 > 0 ? 3 : (d1 > 0 ? 2 : 1);
    return vp_arena_tensor(a, name, dt, ndim, shape, t, NULL);
}

/* Takes every buffer of a learner whose model exists. */
static vp_status learner_alloc(vp_learner* l) {
    vp_backend* b = l->backend;
    const vp_learner_cfg* c = &l->cfg;
    const int64_t B = c->batch, A = vp_model_cfg_actions(&c->model), Z = c->model.n_atoms;
    const int64_t nb = c->model.n_branches, W = l->model.n_weights;
    vp_learner_scratch* s = l->scratch;
    // Optimiser state and counters in backend memory, statistics in mapped memory.
    VP_TRY(vp_arena_init(&l->arena, b, vp_backend_native_mem(b), arena_bytes(l)));
    VP_TRY(take(&l->arena, "target", VP_F32, W, 0, 0, &l->target));
    VP_TRY(take(&l->arena, "adam_m", VP_F32, W, 0, 0, &l->adam_m));
    VP_TRY(take(&l->arena, "adam_v", VP_F32, W, 0, 0, &l->adam_v));
    VP_TRY(take(&l->arena, "step", VP_I32, 1, 0, 0, &l->step));
    VP_TRY(take(&l->arena, "grad_norm", VP_F32, 1, 0, 0, &l->grad_norm));
    VP_TRY(take(&l->arena, "clip_coef", VP_F32, 1, 0, 0, &l->clip_coef));
    VP_TRY(vp_arena_init(&l->mapped, b, VP_MEM_MAPPED, sizeof(float) * (VP_STAT_COUNT + VP_SIG_COUNT) + 2 * 256));
    void* host = NULL;
    int64_t ns = VP_STAT_COUNT;
    VP_TRY(vp_arena_tensor(&l->mapped, "stats", VP_F32, 1, &ns, &l->stats, &host));
    l->stats_host = (const float*)host;
    VP_TRY(vp_signals_alloc(l));
    // Loss buffers.
    VP_TRY(vp_loss_dims_make(&s->dims, &c->model, B, c->n_taus, c->n_target_taus, c->kappa));
    VP_TRY(take(&l->arena, "a_star", VP_I32, B, nb, 0, &s->a_star));
    VP_TRY(take(&l->arena, "proj", VP_F32, B, nb, Z, &s->proj));
    VP_TRY(take(&l->arena, "c51_loss", VP_F32, B, 0, 0, &s->c51_loss));
    VP_TRY(take(&l->arena, "iqn_loss", VP_F32, B, 0, 0, &s->iqn_loss));
    VP_TRY(take(&l->arena, "d_log_probs", VP_F32, B, A, Z, &s->d_log_probs));
    if (c->n_taus > 0) VP_TRY(take(&l->arena, "d_iqn", VP_F32, B, c->n_taus, A, &s->d_iqn));
    // Activations of the three forwards.
    VP_TRY(vp_model_acts_init(&s->acts, &l->model, B, c->n_taus, 1));
    vp_model_acts_set_lane(s->acts, s->lanes[0]);
    VP_TRY(vp_model_acts_init(&s->next_acts, &l->model, B, 0, 0));
    vp_model_acts_q_only(s->next_acts); // the double-DQN choice reads Q only
    VP_TRY(vp_model_acts_init(&s->target_acts, &l->model, B, c->n_target_taus, 0));
    // head modules: the online forward at s_t is the one training forward
    if (c->model.stoch_depth > 0.0f) {
        VP_TRY(take(&l->arena, "drop_u", VP_F32, B, 0, 0, &s->drop_u));
        VP_TRY(vp_model_acts_set_drop(s->acts, &s->drop_u));
    }
    if (c->model.q_denoise) {
        VP_TRY(take(&l->arena, "qd_loss", VP_F32, B, 0, 0, &s->qd_loss));
        VP_TRY(take(&l->arena, "qd_dq", VP_F32, B, A, 0, &s->qd_dq));
        VP_TRY(vp_model_acts_set_qd_grad(s->acts, &s->qd_dq));
    }
    if (c->model.risk_budget > 0.0f) {
        VP_TRY(take(&l->arena, "rb_loss", VP_F32, B, 0, 0, &s->rb_loss));
        VP_TRY(take(&l->arena, "rb_dl", VP_F32, B, 0, 0, &s->rb_dl));
        VP_TRY(vp_model_acts_set_rb_grad(s->acts, &s->rb_dl));
    }
    return VP_OK;
}

vp_status vp_learner_init(vp_learner* l, vp_backend* b, const vp_learner_cfg* cfg) {
    VP_REQUIRE(l != NULL && b != NULL && cfg != NULL, VP_ERR_INVALID_ARG,
               "vp_learner_init: learner, backend or cfg is NULL");
    memset(l, 0, sizeof *l);
    VP_TRY(vp_learner_cfg_check(cfg));
    l->cfg = *cfg;
    l->backend = b;
    l->scratch = (vp_learner_scratch*)calloc(1, sizeof *l->scratch);
    VP_REQUIRE(l->scratch != NULL, VP_ERR_OOM, "vp_learner_init: out of host memory");
    // Model, buffers, then the initial state: target = online, moments and counters zero.
    vp_status s = vp_model_init(&l->model, b, &cfg->model, cfg->seed);
    for (int k = 0; k < 2 && s == VP_OK; ++k) s = vp_backend_lane(b, &l->scratch->lanes[k]);
    if (s == VP_OK) s = learner_alloc(l);
    if (s == VP_OK) s = vp_learner_mods_init(l);
    if (s == VP_OK) s = vp_copy(b, &l->model.params, &l->target);
    if (s == VP_OK) s = vp_fill(b, &l->adam_m, 0.0f);
    if (s == VP_OK) s = vp_fill(b, &l->adam_v, 0.0f);
    if (s == VP_OK) s = vp_fill_i32(b, &l->step, 0);
    if (s == VP_OK) s = vp_fill(b, &l->grad_norm, 0.0f);
    if (s == VP_OK) s = vp_fill(b, &l->clip_coef, 1.0f);
    if (s == VP_OK) s = vp_fill(b, &l->stats, 0.0f);
    if (s == VP_OK) s = vp_signals_reset(l);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s != VP_OK) {
        vp_error_context(s, "vp_learner_init");
        vp_learner_free(l);
    }
    return s;
}

void vp_learner_free(vp_learner* l) {
    if (!l) return;
    if (l->scratch) {
        vp_model_acts_free(l->scratch->acts);
        vp_model_acts_free(l->scratch->next_acts);
        vp_model_acts_free(l->scratch->target_acts);
        vp_learner_mods_free(l);
        for (int k = 0; k < 2; ++k) vp_backend_lane_free(l->backend, l->scratch->lanes[k]);
        free(l->scratch);
    }
    vp_arena_free(&l->arena);
    vp_arena_free(&l->mapped);
    vp_model_free(&l->model);
    memset(l, 0, sizeof *l);
}

vp_status vp_learner_batch_init(vp_learner* l, vp_batch* bt) {
    VP_REQUIRE(l != NULL && l->scratch != NULL && bt != NULL, VP_ERR_INVALID_ARG,
               "vp_learner_batch_init: learner is NULL or not initialised, or batch is NULL");
    VP_REQUIRE(!l->scratch->batch_taken, VP_ERR_STATE, "vp_learner_batch_init: the learner's batch was already taken");
    const vp_learner_cfg* c = &l->cfg;
    const int64_t B = c->batch, P = c->model.n_portfolio, nb = c->model.n_branches;
    memset(bt, 0, sizeof *bt);
    l->scratch->batch_taken = 1;
    vp_arena* a = &l->arena;
    VP_TRY(take(a, "batch.bar_idx", VP_I32, B, 0, 0, &bt->bar_idx));
    VP_TRY(take(a, "batch.next_bar_idx", VP_I32, B, 0, 0, &bt->next_bar_idx));
    VP_TRY(take(a, "batch.portfolio", VP_F32, B, P, 0, &bt->portfolio));
    VP_TRY(take(a, "batch.next_portfolio", VP_F32, B, P, 0, &bt->next_portfolio));
    VP_TRY(take(a, "batch.actions", VP_I32, B, nb, 0, &bt->actions));
    VP_TRY(take(a, "batch.reward", VP_F32, B, 0, 0, &bt->reward));
    VP_TRY(take(a, "batch.discount", VP_F32, B, 0, 0, &bt->discount));
    VP_TRY(take(a, "batch.is_weight", VP_F32, B, 0, 0, &bt->is_weight));
    if (c->n_taus > 0) {
        VP_TRY(take(a, "batch.taus", VP_F32, B, c->n_taus, 0, &bt->taus));
        VP_TRY(take(a, "batch.target_taus", VP_F32, B, c->n_target_taus, 0, &bt->target_taus));
    }
    return VP_OK;
}

vp_status vp_learner_draw_taus(vp_learner* l, vp_batch* bt) {
    VP_REQUIRE(l != NULL && l->scratch != NULL && bt != NULL, VP_ERR_INVALID_ARG,
               "vp_learner_draw_taus: NULL argument");
    if (l->cfg.n_taus == 0) return VP_OK;
    VP_TRY(vp_loss_draw_taus(l->backend, l->cfg.seed, VP_LEARNER_STREAM_TAUS, &l->step, &bt->taus));
    return vp_loss_draw_taus(l->backend, l->cfg.seed, VP_LEARNER_STREAM_TARGET_TAUS, &l->step, &bt->target_taus);
}

vp_status vp_learner_sync_target(vp_learner* l) {
    VP_REQUIRE(l != NULL && l->scratch != NULL, VP_ERR_INVALID_ARG,
               "vp_learner_sync_target: learner is not initialised");
    return vp_copy(l->backend, &l->model.params, &l->target);
}

const char* vp_learner_phase_name(vp_learner_phase phase) {
    static const char* names[VP_PHASE_COUNT] = {"forward", "loss", "backward", "optimiser"};
    return (phase >= 0 && phase < VP_PHASE_COUNT) ? names[phase] : "(bad phase)";
}
