/* The bus's settings, its table of keys and the host copy of the learning-rate schedule. */
#include <math.h>
#include <string.h>

#include "learn/signal_math.h"

#define VP_SIGNAL_KEY_(id, key, unit, doc) key,
static const char* const SIGNAL_KEYS[VP_SIG_COUNT] = {VP_SIGNAL_LIST(VP_SIGNAL_KEY_)};
#undef VP_SIGNAL_KEY_
#define VP_SIGNAL_DOC_(id, key, unit, doc) doc,
static const char* const SIGNAL_DOCS[VP_SIG_COUNT] = {VP_SIGNAL_LIST(VP_SIGNAL_DOC_)};
#undef VP_SIGNAL_DOC_

vp_signals_cfg vp_signals_cfg_default(void) {
    vp_signals_cfg c;
    memset(&c, 0, sizeof c);
    c.every = 100;
    c.fast_rate = 0.1f;
    c.slow_rate = 0.01f;
    c.tau_min = 1e-4f;
    c.tau_max = 0.05f;
    c.div_ref = 0.1f;
    c.eps_gain = 1.0f;
    c.eps_scale_min = 0.5f;
    c.eps_scale_max = 2.0f;
    c.gamma = 0.99f;
    c.gamma_min = 0.9f;
    c.gamma_max = 0.999f;
    c.gamma_rate = 0.01f;
    c.n_step = 1;
    c.kelly_fraction = 0.5f;
    c.kelly_min = 0.1f;
    c.lr_schedule = VP_LR_CONSTANT;
    return c;
}

int vp_signals_bus_on(const vp_signals_cfg* c) {
    return c && (c->enable || c->adapt_tau || c->adapt_epsilon || c->adapt_gamma || c->kelly);
}

/* a in (0, 1] and finite. */
static int unit_rate(float a) { return isfinite(a) && a > 0.0f && a <= 1.0f; }

vp_status vp_signals_cfg_check(const vp_signals_cfg* c) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_signals_cfg_check: cfg is NULL");
    VP_REQUIRE(c->every >= 1 && c->every <= 1000000, VP_ERR_INVALID_ARG,
               "signals config: every = %lld learner steps must lie in [1, 10^6]", (long long)c->every);
    VP_REQUIRE(unit_rate(c->fast_rate) && unit_rate(c->slow_rate), VP_ERR_INVALID_ARG,
               "signals config: fast_rate = %g and slow_rate = %g must lie in (0, 1]", (double)c->fast_rate,
               (double)c->slow_rate);
    VP_REQUIRE(c->tau_min > 0.0f && c->tau_min <= c->tau_max && c->tau_max <= 1.0f && c->div_ref > 0.0f &&
                   isfinite(c->div_ref),
               VP_ERR_INVALID_ARG, "signals config: tau bounds [%g, %g] must satisfy 0 < tau_min <= tau_max <= 1 and "
               "div_ref = %g be positive", (double)c->tau_min, (double)c->tau_max, (double)c->div_ref);
    VP_REQUIRE(isfinite(c->eps_gain) && c->eps_scale_min >= 0.0f && c->eps_scale_min <= c->eps_scale_max &&
                   isfinite(c->eps_scale_max),
               VP_ERR_INVALID_ARG, "signals config: epsilon scale bounds [%g, %g] must satisfy 0 <= min <= max "
               "(gain %g finite)", (double)c->eps_scale_min, (double)c->eps_scale_max, (double)c->eps_gain);
    VP_REQUIRE(c->gamma_min > 0.0f && c->gamma_min <= c->gamma_max && c->gamma_max <= 1.0f && isfinite(c->gamma_rate),
               VP_ERR_INVALID_ARG, "signals config: gamma bounds [%g, %g] must satisfy 0 < gamma_min <= gamma_max <= 1",
               (double)c->gamma_min, (double)c->gamma_max);
    VP_REQUIRE(!c->adapt_gamma || (c->gamma > 0.0f && c->gamma <= 1.0f), VP_ERR_INVALID_ARG,
               "signals config: the gamma rule scales gamma^n by (gamma / learn.gamma)^n, so learn.gamma = %g must "
               "be positive", (double)c->gamma);
    VP_REQUIRE(c->n_step >= 1 && c->n_step <= 256, VP_ERR_INVALID_ARG, "signals config: n_step = %d not in [1, 256]",
               c->n_step);
    VP_REQUIRE(c->kelly_fraction > 0.0f && isfinite(c->kelly_fraction) && c->kelly_min >= 0.0f &&
                   c->kelly_min <= 1.0f,
               VP_ERR_INVALID_ARG, "signals config: kelly_fraction = %g must be positive and kelly_min = %g lie in "
               "[0, 1]", (double)c->kelly_fraction, (double)c->kelly_min);
    VP_REQUIRE(c->lr_schedule >= VP_LR_CONSTANT && c->lr_schedule < VP_LR_SCHEDULE_COUNT, VP_ERR_INVALID_ARG,
               "signals config: lr_schedule %d (0 constant, 1 cosine, 2 warmup_cosine)", (int)c->lr_schedule);
    VP_REQUIRE(c->warmup_steps >= 0 && c->total_steps >= 0, VP_ERR_INVALID_ARG,
               "signals config: warmup_steps = %lld and total_steps = %lld must not be negative",
               (long long)c->warmup_steps, (long long)c->total_steps);
    return VP_OK;
}

const char* vp_signal_key(int s) { return s >= 0 && s < VP_SIG_COUNT ? SIGNAL_KEYS[s] : "(bad signal)"; }

const char* vp_signal_doc(int s) { return s >= 0 && s < VP_SIG_COUNT ? SIGNAL_DOCS[s] : ""; }

float vp_signals_lr_at(const vp_signals_cfg* c, float lr0, int64_t k) {
    if (!c) return lr0;
    return vp_sig_lr_at((int)c->lr_schedule, lr0, c->warmup_steps, c->total_steps, k < 0 ? 0 : k);
}
