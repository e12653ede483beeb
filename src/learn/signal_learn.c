/* The bus inside the learner: its buffers, first values and the ops of a step (schedule,
 * discount factor, Polyak update with the drift sums, the bus kernel). */
#include <string.h>

#include "learn/learner_internal.h"
#include "learn/signal_learn.h"
#include "learn/signal_math.h"

/* The table of a backend's kind; fails with VP_ERR_UNSUPPORTED where there is none. */
static vp_status kernels_for(const char* fn, vp_backend* b, const vp_sig_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "signal-bus kernels", b, &vp_sig_cpu, VP_KERNELS_CUDA(vp_sig_cuda), &t);
    *out = (const vp_sig_kernels*)t;
    return s;
}

int64_t vp_signals_arena_floats(const vp_learner_cfg* c, int64_t n_weights) {
    return VP_CTL_COUNT + (vp_signals_bus_on(&c->signals) ? n_weights + c->batch + 2 * VP_SIG_PARTIAL_DOUBLES : 0);
}

vp_tensor vp_learner_control(const vp_learner* l, int k) {
    vp_tensor t;
    memset(&t, 0, sizeof t);
    if (!l || !l->ctl.data || k < 0 || k >= VP_CTL_COUNT) return t;
    return vp_tensor_1d((float*)l->ctl.data + k, VP_F32, l->ctl.mem, 1);
}

vp_status vp_learner_set_control(vp_learner* l, int k, float v) {
    VP_REQUIRE(l != NULL && l->ctl.data != NULL, VP_ERR_INVALID_ARG, "vp_learner_set_control: learner is not initialised");
    VP_REQUIRE(k >= 0 && k < VP_CTL_COUNT, VP_ERR_INVALID_ARG, "vp_learner_set_control: control %d not in [0, %d)", k,
               (int)VP_CTL_COUNT);
    vp_tensor t = vp_learner_control(l, k);
    return vp_upload(l->backend, &t, &v, sizeof v);
}

vp_status vp_signals_alloc(vp_learner* l) {
    const int64_t nc = VP_CTL_COUNT, ns = VP_SIG_COUNT;
    VP_TRY(vp_arena_tensor(&l->arena, "signals.ctl", VP_F32, 1, &nc, &l->ctl, NULL));
    void* host = NULL;
    VP_TRY(vp_arena_tensor(&l->mapped, "signals.bus", VP_F32, 1, &ns, &l->signals, &host));
    l->signals_host = (const float*)host;
    if (!vp_signals_bus_on(&l->cfg.signals)) return VP_OK;
    const int64_t W = l->model.n_weights, B = l->cfg.batch;
    const int64_t P = 2 * VP_SIG_PARTIAL_DOUBLES;
    VP_TRY(vp_arena_tensor(&l->arena, "signals.diff", VP_F32, 1, &W, &l->scratch->sig_diff, NULL));
    VP_TRY(vp_arena_tensor(&l->arena, "signals.partial", VP_F32, 1, &P, &l->scratch->sig_part, NULL));
    return vp_arena_tensor(&l->arena, "signals.disc", VP_F32, 1, &B, &l->scratch->sig_disc, NULL);
}

vp_status vp_signals_reset(vp_learner* l) {
    const vp_learner_cfg* c = &l->cfg;
    float ctl[VP_CTL_COUNT] = {0}, sig[VP_SIG_COUNT] = {0};
    ctl[VP_CTL_LR] = vp_signals_lr_at(&c->signals, c->adamw.lr, 0);
    ctl[VP_CTL_CLIP] = c->clip_norm;
    ctl[VP_CTL_TAU] = c->polyak_tau;
    ctl[VP_CTL_EPS_SCALE] = 1.0f;
    ctl[VP_CTL_GAMMA] = c->signals.gamma;
    ctl[VP_CTL_DISC_SCALE] = 1.0f;
    ctl[VP_CTL_KELLY_CAP] = 1.0f;
    sig[VP_SIG_LR] = ctl[VP_CTL_LR];
    sig[VP_SIG_CLIP] = ctl[VP_CTL_CLIP];
    sig[VP_SIG_TAU] = ctl[VP_CTL_TAU];
    sig[VP_SIG_EPS_SCALE] = 1.0f;
    sig[VP_SIG_GAMMA] = ctl[VP_CTL_GAMMA];
    sig[VP_SIG_KELLY_CAP] = 1.0f;
    VP_TRY(vp_upload(l->backend, &l->ctl, ctl, sizeof ctl));
    return vp_upload(l->backend, &l->signals, sig, sizeof sig);
}

vp_status vp_signals_schedule(vp_learner* l) {
    const vp_signals_cfg* c = &l->cfg.signals;
    if (c->lr_schedule == VP_LR_CONSTANT) return VP_OK;
    const vp_sig_kernels* k = NULL;
    VP_TRY(kernels_for("vp_learner_step", l->backend, &k));
    return k->sched(l->backend, (int)c->lr_schedule, l->cfg.adamw.lr, c->warmup_steps, c->total_steps,
                    (const int32_t*)l->step.data, (float*)l->ctl.data + VP_CTL_LR);
}

vp_status vp_signals_discount(vp_learner* l, const vp_batch* bt, const vp_tensor** disc) {
    *disc = &bt->discount;
    if (!l->cfg.signals.adapt_gamma) return VP_OK;
    vp_tensor* d = &l->scratch->sig_disc;
    const vp_tensor f = vp_learner_control(l, VP_CTL_DISC_SCALE);
    VP_TRY(vp_copy(l->backend, &bt->discount, d));
    VP_TRY(vp_scale_by(l->backend, d, &f));
    *disc = d;
    return VP_OK;
}

vp_status vp_signals_polyak(vp_learner* l) {
    vp_backend* b = l->backend;
    const float tau = l->cfg.polyak_tau;
    if (!vp_signals_bus_on(&l->cfg.signals))
        return vp_axpby(b, tau, &l->model.params, 1.0f - tau, &l->target);
    // the drift sums: ||online - target||^2 and ||online||^2, before the update
    vp_tensor* diff = &l->scratch->sig_diff;
    vp_tensor dss = vp_learner_control(l, VP_CTL_DRIFT_SS), pss = vp_learner_control(l, VP_CTL_PARAM_SS);
    VP_TRY(vp_copy(b, &l->model.params, diff));
    VP_TRY(vp_axpby(b, -1.0f, &l->target, 1.0f, diff));
    VP_TRY(vp_reduce_all(b, VP_REDUCE_SUMSQ, diff, &dss));
    VP_TRY(vp_reduce_all(b, VP_REDUCE_SUMSQ, &l->model.params, &pss));
    if (!l->cfg.signals.adapt_tau) return vp_axpby(b, tau, &l->model.params, 1.0f - tau, &l->target);
    // the tau rule's rate, read on the device: target += tau (online - target)
    const vp_tensor t = vp_learner_control(l, VP_CTL_TAU);
    VP_TRY(vp_scale_by(b, diff, &t));
    return vp_axpby(b, 1.0f, diff, 1.0f, &l->target);
}

/* The launch constants of the bus from the learner's settings. */
static vp_sig_params bus_params(const vp_learner* l) {
    const vp_learner_cfg* c = &l->cfg;
    const vp_signals_cfg* s = &c->signals;
    const vp_loss_dims* d = &l->scratch->dims;
    vp_sig_params p;
    memset(&p, 0, sizeof p);
    p.batch = d->batch;
    p.n_actions = d->n_actions;
    p.n_branches = d->n_branches;
    for (int br = 0; br < d->n_branches; ++br) {
        p.branch_size[br] = d->branch_size[br];
        p.branch_offset[br] = d->branch_offset[br];
    }
    p.n_atoms = d->n_atoms;
    p.v_min = d->v_min;
    p.dz = (d->v_max - d->v_min) / (float)(d->n_atoms - 1);
    p.fast_rate = s->fast_rate;
    p.slow_rate = s->slow_rate;
    p.every = (float)s->every;
    p.rules = (s->adapt_tau ? VP_SIG_RULE_TAU : 0) | (s->adapt_epsilon ? VP_SIG_RULE_EPS : 0) |
              (s->adapt_gamma ? VP_SIG_RULE_GAMMA : 0) | (s->kelly ? VP_SIG_RULE_KELLY : 0);
    p.tau0 = c->polyak_tau;
    p.tau_min = s->tau_min;
    p.tau_max = s->tau_max;
    p.div_ref = s->div_ref;
    p.eps_gain = s->eps_gain;
    p.eps_min = s->eps_scale_min;
    p.eps_max = s->eps_scale_max;
    p.gamma0 = s->gamma;
    p.gamma_min = s->gamma_min;
    p.gamma_max = s->gamma_max;
    p.gamma_rate = s->gamma_rate;
    p.n_step = s->n_step;
    p.kelly_fraction = s->kelly_fraction;
    p.kelly_min = s->kelly_min;
    return p;
}

vp_status vp_signals_bus(vp_learner* l, const vp_batch* bt) {
    if (!vp_signals_bus_on(&l->cfg.signals)) return VP_OK;
    const vp_tensor* disc = l->cfg.signals.adapt_gamma ? &l->scratch->sig_disc : &bt->discount;
    const vp_sig_kernels* k = NULL;
    VP_TRY(kernels_for("vp_learner_step", l->backend, &k));
    vp_learner_scratch* s = l->scratch;
    const vp_sig_params p = bus_params(l);
    vp_tensor lp = vp_model_log_probs(s->acts), q = vp_model_q_c51(s->acts);
    vp_tensor qn = vp_model_q_c51(s->next_acts), qt = vp_model_q_c51(s->target_acts);
    vp_sig_inputs in;
    in.log_probs = (const float*)lp.data;
    in.d_log_probs = (const float*)s->d_log_probs.data;
    in.q = (const float*)q.data;
    in.q_next = (const float*)qn.data;
    in.q_tnext = (const float*)qt.data;
    in.actions = (const int32_t*)bt->actions.data;
    in.a_star = (const int32_t*)s->a_star.data;
    in.reward = (const float*)bt->reward.data;
    in.discount = (const float*)disc->data;
    in.stats = (const float*)l->stats.data;
    in.support = l->cfg.model.adaptive_atoms ? (const float*)s->mods.support.data : NULL;
    return k->bus(l->backend, &p, &in, (float*)l->ctl.data, (float*)l->signals.data, (double*)s->sig_part.data);
}
