/* The model configuration: defaults, checks and the FLOP count. */
#include <math.h>

#include "model/model_atoms.h"
#include "model/model_internal.h"

/* Limits of the model kernels (window and state live on the stack / in registers). */
#define VP_MODEL_MAX_WINDOW 64
#define VP_MODEL_MAX_STATE 64
#define VP_MODEL_MAX_CONV 8
_Static_assert(VP_MODEL_MAX_WINDOW <= VP_MAMBA_MAX_K && VP_MODEL_MAX_STATE <= VP_MAMBA_MAX_N &&
                   VP_MODEL_MAX_CONV <= VP_MAMBA_MAX_CW,
               "a model the checks accept must fit the Mamba2 kernels (model/mops.h)");

vp_model_cfg vp_model_cfg_default(void) {
    vp_model_cfg c = {0};
    c.n_features = 32;
    c.n_portfolio = 8;
    c.window = 8;
    c.hidden = 256;
    c.encoder = VP_ENCODER_MAMBA2;
    c.mamba_state = 16;
    c.mamba_head_dim = 64;
    c.mamba_conv = 4;
    c.tlob_blocks = 2;
    c.tlob_heads = 4;
    c.tlob_feature_heads = 1;
    c.tlob_mlp = 4;
    c.head_hidden = 128;
    c.n_atoms = 51;
    c.v_min = -10.0f;
    c.v_max = 10.0f;
    c.n_branches = 4;
    c.branch_sizes[0] = 3;
    c.branch_sizes[1] = 4;
    c.branch_sizes[2] = 3;
    c.branch_sizes[3] = 3;
    c.iqn_cos = 64;
    c.ln_eps = 1e-5f;
    c.rms_eps = 1e-5f;
    c.vsn_hidden = 16;
    c.kan_grid = 5;
    c.kan_order = 3;
    c.kan_range = 3.0f;
    return c;
}

vp_branch_map vp_model_branch_map(const vp_model_cfg* c) {
    vp_branch_map br = {c->n_branches, {0}};
    const int cap = (int)(sizeof br.size / sizeof br.size[0]);
    for (int i = 0; i < c->n_branches && i < cap; ++i) br.size[i] = c->branch_sizes[i];
    return br;
}

int vp_model_cfg_actions(const vp_model_cfg* c) {
    if (!c || c->n_branches < 1 || c->n_branches > VP_MAX_BRANCHES) return 0;
    int a = 0;
    for (int i = 0; i < c->n_branches; ++i) a += c->branch_sizes[i];
    return a;
}

/* Fails naming `field` unless lo <= v <= hi. */
#define CHECK_RANGE(field, lo, hi)                                                                 \
    VP_REQUIRE(c->field >= (lo) && c->field <= (hi), VP_ERR_INVALID_ARG,                           \
               "model config: " #field " = %d is outside [%d, %d]", (int)c->field, (int)(lo), (int)(hi))

vp_status vp_model_cfg_check(const vp_model_cfg* c) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_model_cfg_check: cfg is NULL");
    const int big = 1 << 16;
    CHECK_RANGE(n_features, 1, big);
    CHECK_RANGE(n_portfolio, 1, big);
    CHECK_RANGE(window, 1, VP_MODEL_MAX_WINDOW);
    CHECK_RANGE(hidden, 1, big);
    CHECK_RANGE(encoder, 0, VP_ENCODER_COUNT - 1);
    if (c->encoder == VP_ENCODER_MAMBA2) {
        CHECK_RANGE(mamba_state, 1, VP_MODEL_MAX_STATE);
        CHECK_RANGE(mamba_head_dim, 1, c->hidden);
        CHECK_RANGE(mamba_conv, 1, VP_MODEL_MAX_CONV);
        VP_REQUIRE(c->hidden % c->mamba_head_dim == 0, VP_ERR_INVALID_ARG,
                   "model config: hidden = %d is not a multiple of mamba_head_dim = %d", c->hidden,
                   c->mamba_head_dim);
    }
    if (c->encoder == VP_ENCODER_TLOB) VP_TRY(vp_model_tlob_check(c));
    CHECK_RANGE(head_hidden, 1, big);
    CHECK_RANGE(n_atoms, 2, 4096);
    VP_REQUIRE(isfinite(c->v_min) && isfinite(c->v_max) && c->v_min < c->v_max, VP_ERR_INVALID_ARG,
               "model config: v_min = %g must be below v_max = %g", (double)c->v_min, (double)c->v_max);
    CHECK_RANGE(n_branches, 1, VP_MAX_BRANCHES);
    for (int i = 0; i < c->n_branches; ++i)
        VP_REQUIRE(c->branch_sizes[i] >= 1 && c->branch_sizes[i] <= 64, VP_ERR_INVALID_ARG,
                   "model config: branch_sizes[%d] = %d is outside [1, 64]", i, c->branch_sizes[i]);
    CHECK_RANGE(iqn_cos, 1, 4096);
    VP_REQUIRE(c->ln_eps > 0.0f && isfinite(c->ln_eps), VP_ERR_INVALID_ARG, "model config: ln_eps = %g must be positive",
               (double)c->ln_eps);
    VP_REQUIRE(c->rms_eps > 0.0f && isfinite(c->rms_eps), VP_ERR_INVALID_ARG,
               "model config: rms_eps = %g must be positive", (double)c->rms_eps);
    VP_TRY(vp_model_hmods_check(c));
    VP_TRY(vp_model_atoms_check(c));
    return vp_model_input_check(c);
}

const char* vp_model_encoder_name(vp_model_encoder e) {
    static const char* const names[VP_ENCODER_COUNT] = {"mamba2", "tlob", "none"};
    return (int)e >= 0 && e < VP_ENCODER_COUNT ? names[e] : "?";
}

int vp_model_trunk_steps(const vp_model_cfg* c) { return c->encoder == VP_ENCODER_NONE ? 1 : c->window; }

/* 2 m n k of one product. */
static double mm(double m, double n, double k) { return 2.0 * m * n * k; }

double vp_model_flops(const vp_model_cfg* c, int64_t batch, int n_taus, int backward) {
    if (!c || vp_model_cfg_check(c) != VP_OK || batch < 1 || n_taus < 0) return 0.0;
    const double B = (double)batch, R = B * vp_model_trunk_steps(c), F = c->n_features, H = c->hidden;
    const int MB = c->encoder == VP_ENCODER_MAMBA2;
    const double N = c->mamba_state, NH = MB ? (double)(c->hidden / c->mamba_head_dim) : 0.0;
    const double HH = c->head_hidden, Z = c->n_atoms, A = vp_model_cfg_actions(c), Q = B * n_taus;
    // forward products; `first` are those whose input needs no gradient
    double first = c->kan ? 0.0 : mm(R, H, F), rest = mm(R, H, H);
    if (MB) rest += mm(R, H + 2 * N + NH, H) + mm(B, H, H) + mm(B, H, H);
    rest += vp_model_tlob_flops(c, B);
    rest += mm(B, H, c->n_portfolio) + 2 * mm(B, HH, H) + mm(B, Z, HH) + mm(B, A * Z, HH);
    if (n_taus > 0) {
        first += mm(Q, H, c->iqn_cos);
        rest += mm(Q, HH, H) + mm(Q, A, HH);
    }
    // backward: weight gradient of every product, input gradient of all but the first
    double fwd = first + rest;
    return (backward ? fwd + fwd + rest : fwd) + vp_model_input_flops(c, R, backward) +
           vp_model_hmods_flops(c, batch, backward);
}
