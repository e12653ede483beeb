/* Curiosity's set-up: the configuration check, the state block (parameters, AdamW moments,
 * step) with its seeded initialisation, the scratch arena and the policy workspace. The
 * forward, reward and training ops are curiosity_step.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/curiosity_impl.h"
#include "vulpes/curiosity.h"
#include "vulpes/rng.h"

/* Philox stream of the parameter initialisation ("CURI"). */
#define CUR_INIT_STREAM 0x43555249u

vp_status vp_curiosity_cfg_check(const vp_curiosity_cfg* c) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_curiosity_cfg_check: cfg is NULL");
    VP_REQUIRE(c->n_envs >= 1 && c->batch >= 1, VP_ERR_INVALID_ARG,
               "curiosity: %lld envs and batch %lld (both must be >= 1)", (long long)c->n_envs, (long long)c->batch);
    VP_REQUIRE(c->steps_per_iter >= 0, VP_ERR_INVALID_ARG, "curiosity: %lld collection steps per iteration (>= 0)",
               (long long)c->steps_per_iter);
    VP_REQUIRE(c->enc_dim >= 1 && c->n_portfolio >= 1, VP_ERR_INVALID_ARG,
               "curiosity: encoding width %d and portfolio width %d (both must be >= 1)", c->enc_dim, c->n_portfolio);
    VP_REQUIRE(c->layout.n_branches >= 1 && c->layout.n_branches <= VP_ENV_BRANCHES && c->layout.n_heads >= 1,
               VP_ERR_INVALID_ARG, "curiosity: action layout of %d branches and %d heads", c->layout.n_branches,
               c->layout.n_heads);
    VP_REQUIRE(c->hidden >= 1 && c->hidden <= 65536, VP_ERR_INVALID_ARG,
               "curiosity.hidden is %d, must be in 1..65536", c->hidden);
    VP_REQUIRE(c->eta >= 0.0f && isfinite(c->eta), VP_ERR_INVALID_ARG, "curiosity.eta is %g, must be >= 0 and finite",
               (double)c->eta);
    VP_REQUIRE(c->adamw.lr > 0.0f && isfinite(c->adamw.lr), VP_ERR_INVALID_ARG,
               "curiosity.lr is %g, must be > 0 and finite", (double)c->adamw.lr);
    VP_REQUIRE(c->precision == VP_PREC_FP32 || c->precision == VP_PREC_TF32, VP_ERR_INVALID_ARG,
               "curiosity: GEMM precision %d (the forward model runs in FP32 or TF32)", (int)c->precision);
    return VP_OK;
}

/* Parameters drawn on the host: each weight of a layer with fan-in k uniform in [-1/sqrt(k),
 * 1/sqrt(k)) from Philox(seed, CUR_INIT_STREAM, its index), biases 0. w [W]. */
static void init_params(const vp_curiosity* c, float* w) {
    const int64_t D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    const int64_t n1 = Hd * D, n2 = P * Hd;
    const float a1 = 1.0f / sqrtf((float)D), a2 = 1.0f / sqrtf((float)Hd);
    memset(w, 0, (size_t)c->n_weights * sizeof *w);
    for (int64_t i = 0; i < n1; ++i)
        w[i] = a1 * (2.0f * vp_rng_uniform(c->cfg.seed, CUR_INIT_STREAM, (uint64_t)i) - 1.0f);
    for (int64_t i = 0; i < n2; ++i)
        w[n1 + Hd + i] = a2 * (2.0f * vp_rng_uniform(c->cfg.seed, CUR_INIT_STREAM, (uint64_t)(n1 + Hd + i)) - 1.0f);
}

/* The state block: params, adam_m, adam_v [W] f32 each, then step [1] i32; initialised. */
static vp_status state_init(vp_curiosity* c) {
    const int64_t W = c->n_weights;
    const vp_mem mem = vp_backend_native_mem(c->backend);
    VP_TRY(vp_buffer_alloc(c->backend, mem, (size_t)(3 * W + 1) * 4, &c->state));
    float* base = (float*)c->state.dev;
    c->state_words = vp_tensor_1d(base, VP_I32, mem, 3 * W + 1);
    c->params = vp_tensor_1d(base, VP_F32, mem, W);
    c->adam_m = vp_tensor_1d(base + W, VP_F32, mem, W);
    c->adam_v = vp_tensor_1d(base + 2 * W, VP_F32, mem, W);
    c->step = vp_tensor_1d(base + 3 * W, VP_I32, mem, 1);
    float* w = (float*)malloc((size_t)W * sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "curiosity: out of host memory for %lld parameters", (long long)W);
    init_params(c, w);
    vp_status s = vp_upload(c->backend, &c->params, w, (size_t)W * sizeof *w);
    free(w);
    VP_TRY(s);
    VP_TRY(vp_fill(c->backend, &c->adam_m, 0.0f));
    VP_TRY(vp_fill(c->backend, &c->adam_v, 0.0f));
    return vp_fill_i32(c->backend, &c->step, 0);
}

/* Takes an f32 tensor [rows] (cols 0) or [rows, cols] from the scratch arena. */
static vp_status take(vp_curiosity* c, const char* name, int64_t rows, int64_t cols, vp_tensor* out) {
    int64_t shape[2] = {rows, cols};
    return vp_arena_tensor(&c->arena, name, VP_F32, cols > 0 ? 2 : 1, shape, out, NULL);
}

/* The scratch: gradients, activations of N = max(E, B) rows, the reward, sums, statistics. */
static vp_status scratch_init(vp_curiosity* c) {
    const int64_t E = c->cfg.n_envs, B = c->cfg.batch, N = E > B ? E : B;
    const int64_t D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    const int64_t floats = c->n_weights + N * (D + 2 * Hd + 2 * P + 1) + E + B * (P + 1) + 2 + VP_CUR_STAT_COUNT;
    VP_TRY(vp_arena_init(&c->arena, c->backend, vp_backend_native_mem(c->backend), (size_t)floats * 4 + 16 * 256));
    VP_TRY(take(c, "curiosity.grads", c->n_weights, 0, &c->grads));
    VP_TRY(take(c, "curiosity.x", N, D, &c->x));
    VP_TRY(take(c, "curiosity.h", N, Hd, &c->h));
    VP_TRY(take(c, "curiosity.f", N, P, &c->f));
    VP_TRY(take(c, "curiosity.diff", N, P, &c->diff));
    VP_TRY(take(c, "curiosity.sq", N, 0, &c->sq));
    VP_TRY(take(c, "curiosity.dh", N, Hd, &c->dh));
    VP_TRY(take(c, "curiosity.reward", E, 0, &c->reward));
    VP_TRY(take(c, "curiosity.acc", 1, 0, &c->acc));
    VP_TRY(take(c, "curiosity.tmp", 1, 0, &c->tmp));
    VP_TRY(take(c, "curiosity.stats", VP_CUR_STAT_COUNT, 0, &c->stats));
    VP_TRY(take(c, "curiosity.port1", B, P, &c->port1));
    VP_TRY(take(c, "curiosity.done1", B, 0, &c->done1));
    VP_TRY(vp_fill(c->backend, &c->done1, 0.0f));
    // activations start at 0 (a prime reads them before any forward wrote them)
    VP_TRY(vp_fill(c->backend, &c->x, 0.0f));
    VP_TRY(vp_fill(c->backend, &c->h, 0.0f));
    VP_TRY(vp_fill(c->backend, &c->f, 0.0f));
    VP_TRY(vp_fill(c->backend, &c->acc, 0.0f));
    VP_TRY(vp_fill(c->backend, &c->stats, 0.0f));
    return vp_fill(c->backend, &c->port1, 0.0f);
}

vp_status vp_curiosity_init(vp_curiosity* c, vp_backend* b, const vp_curiosity_cfg* cfg, const vp_policy* pol) {
    VP_REQUIRE(c != NULL && b != NULL, VP_ERR_INVALID_ARG, "vp_curiosity_init: curiosity or backend is NULL");
    memset(c, 0, sizeof *c);
    VP_TRY(vp_curiosity_cfg_check(cfg));
    if (pol) {
        VP_TRY(vp_policy_check(pol));
        VP_REQUIRE(pol->backend == b && pol->enc_dim == cfg->enc_dim && pol->n_portfolio == cfg->n_portfolio,
                   VP_ERR_INVALID_ARG, "vp_curiosity_init: the policy (encoding width %d, portfolio %d) does not "
                   "match the forward model (%d, %d) or lives on another backend", pol->enc_dim, pol->n_portfolio,
                   cfg->enc_dim, cfg->n_portfolio);
    }
    c->cfg = *cfg;
    c->backend = b;
    const int64_t Hd = cfg->hidden, P = cfg->n_portfolio;
    c->in_dim = (int64_t)cfg->enc_dim + P + cfg->layout.n_heads;
    c->n_weights = Hd * c->in_dim + Hd + P * Hd + P;
    vp_status s = state_init(c);
    if (s == VP_OK) s = scratch_init(c);
    if (s == VP_OK && pol) {
        c->policy = *pol;
        s = vp_policy_work_init(&c->policy, cfg->batch, &c->work);
    }
    if (s != VP_OK) {
        vp_curiosity_free(c);
        return vp_error_context(s, "curiosity forward model (hidden %d, %lld weights)", cfg->hidden,
                                (long long)(Hd * ((int64_t)cfg->enc_dim + P + cfg->layout.n_heads) + Hd + P * Hd + P));
    }
    return VP_OK;
}

void vp_curiosity_free(vp_curiosity* c) {
    if (!c) return;
    if (c->work) vp_policy_work_free(&c->policy, c->work);
    if (c->backend) {
        vp_arena_free(&c->arena);
        vp_buffer_free(c->backend, &c->state);
    }
    memset(c, 0, sizeof *c);
}

vp_status vp_curiosity_check_state(vp_curiosity* c, int64_t learner_steps, const char* path) {
    VP_REQUIRE(c != NULL && c->state.dev != NULL && path != NULL, VP_ERR_INVALID_ARG,
               "vp_curiosity_check_state: curiosity is not initialised or path is NULL");
    const int64_t W = c->n_weights;
    const size_t bytes = (size_t)(3 * W + 1) * 4;
    float* h = (float*)malloc(bytes);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "checkpoint %s: out of host memory for curiosity's %zu bytes", path, bytes);
    vp_status s = vp_download(c->backend, h, &c->state_words, bytes);
    static const char* names[3] = {"parameters", "first moments", "second moments"};
    for (int64_t i = 0; s == VP_OK && i < 3 * W; ++i) {
        const float v = h[i];
        if (isfinite(v) && (i < 2 * W || v >= 0.0f)) continue;
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s: tensor 'curiosity.state' has %g in its %s at element "
                         "%lld (must be finite%s)", path, (double)v, names[i / W], (long long)(i % W),
                         i >= 2 * W ? " and >= 0" : "");
    }
    int32_t step = 0;
    memcpy(&step, h + 3 * W, sizeof step);
    free(h);
    VP_TRY(s);
    const int64_t want = learner_steps < INT32_MAX ? learner_steps : INT32_MAX;
    VP_REQUIRE(step == want, VP_ERR_PARSE,
               "checkpoint %s: tensor 'curiosity.state' has step %d, but vulpes.learner_steps = %lld (must be %lld)",
               path, (int)step, (long long)learner_steps, (long long)want);
    return VP_OK;
}

vp_status vp_curiosity_stats_read(vp_curiosity* c, float* out) {
    VP_REQUIRE(c != NULL && c->stats.data != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_curiosity_stats_read: curiosity is not initialised or out is NULL");
    return vp_download(c->backend, out, &c->stats, VP_CUR_STAT_COUNT * sizeof(float));
}
