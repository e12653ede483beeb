/* The parameter table: built from the configuration, driving allocation, initialisation,
 * names and views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "vulpes/rng.h"

_Static_assert(VP_PS_COUNT <= VP_MODEL_MAX_SLOTS, "VP_MODEL_MAX_SLOTS is smaller than the parameter table");

/* FNV-1a of a name: the Philox stream of that parameter. */
static uint64_t name_stream(const char* s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; ++s) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* Fills the table rows present for `c` into `info` (may be NULL to count); returns the count. */
static int build_table(const vp_model_cfg* c, vp_param_info* info, int* slot, int64_t* total) {
    const int64_t F = c->n_features, P = c->n_portfolio, H = c->hidden, MB = c->encoder == VP_ENCODER_MAMBA2;
    const int64_t N = MB ? c->mamba_state : 0, NH = MB ? c->hidden / c->mamba_head_dim : 0;
    const int64_t CW = c->mamba_conv, HH = c->head_hidden, Z = c->n_atoms, A = vp_model_cfg_actions(c);
    const int64_t NC = c->iqn_cos, QD = c->q_denoise ? 1 : 0, A2 = 2 * A;
    const int64_t VS = c->vsn, VH = c->vsn_hidden, SN = c->spectral_norm, KN = c->kan;
    const int64_t KG = c->kan_grid, KFC = F * (c->kan_grid + c->kan_order);
    const int64_t NB = c->n_branches, XB = c->cross_branch ? 1 : 0, RB = c->risk_budget > 0.0f ? 1 : 0;
    const int64_t AD = c->adaptive_atoms ? 1 : 0;
    const int64_t TL = c->encoder == VP_ENCODER_TLOB, K = c->window, TB = c->tlob_blocks, TM = c->tlob_mlp;
    const int64_t TMH = TM * H, TMK = TM * K;
    int n = 0;
    int64_t off = 0;
    for (int s = 0; s < VP_MODEL_MAX_SLOTS; ++s) slot[s] = -1;
#define VP_PARAM_ROW(sl, nm, rows, cols, ini, fan, present)                                 \
    if (present) {                                                                          \
        if (info) {                                                                         \
            vp_param_info* p = &info[n];                                                    \
            memset(p, 0, sizeof *p);                                                        \
            snprintf(p->name, sizeof p->name, "%s", nm);                                    \
            p->ndim = (cols) ? 2 : 1;                                                       \
            p->shape[0] = (rows);                                                           \
            p->shape[1] = (cols) ? (cols) : 1;                                              \
            p->numel = (int64_t)(rows) * ((cols) ? (cols) : 1);                              \
            p->offset = off;                                                                \
            p->init = ini;                                                                  \
            p->bound = (float)(1.0 / sqrt((double)(fan)));                                  \
            p->id = VP_PS_##sl;                                                             \
        }                                                                                   \
        slot[VP_PS_##sl] = n++;                                                             \
        off += ((int64_t)(rows) * ((cols) ? (cols) : 1) + VP_PARAM_ALIGN - 1) / VP_PARAM_ALIGN * \
               VP_PARAM_ALIGN;                                                              \
    }
    VP_MODEL_PARAMS(VP_PARAM_ROW)
#undef VP_PARAM_ROW
    *total = off;
    return n;
}

/* The initial value of element i of parameter p. */
static float init_value(const vp_param_info* p, uint64_t seed, int64_t i) {
    const uint64_t stream = name_stream(p->name);
    switch (p->init) {
    case VP_INIT_UNIFORM: return p->bound * (2.0f * vp_rng_uniform(seed, stream, (uint64_t)i) - 1.0f);
    case VP_INIT_ONES: return 1.0f;
    case VP_INIT_ZEROS: return 0.0f;
    case VP_INIT_A_LOG: return (float)log(1.0 + 15.0 * (double)vp_rng_uniform(seed, stream, (uint64_t)i));
    case VP_INIT_NEAR_EYE: {
        const int64_t cols = p->shape[1], r = (i / cols) % cols, col = i % cols;
        return (r == col ? 1.0f : 0.0f) + p->bound * (2.0f * vp_rng_uniform(seed, stream, (uint64_t)i) - 1.0f);
    }
    case VP_INIT_DT_BIAS: {
        // dt = exp(U * (log 0.1 - log 0.001) + log 0.001), floored at 1e-4; inverse softplus
        double u = vp_rng_uniform(seed, stream, (uint64_t)i);
        double dt = exp(u * (log(0.1) - log(0.001)) + log(0.001));
        if (dt < 1e-4) dt = 1e-4;
        return (float)(dt + log(-expm1(-dt)));
    }
    default: return 0.0f;
    }
}

vp_status vp_model_init_params(const vp_model* m, vp_tensor* flat, uint64_t seed) {
    VP_REQUIRE(m != NULL && m->info != NULL, VP_ERR_INVALID_ARG, "vp_model_init_params: model is NULL");
    VP_TRY(vp_tensor_check_numel("vp_model_init_params", "flat", m->backend, flat, VP_F32, m->n_weights));
    float* host = (float*)calloc((size_t)m->n_weights, sizeof(float));
    VP_REQUIRE(host != NULL, VP_ERR_OOM, "vp_model_init_params: no host memory for %lld floats",
               (long long)m->n_weights);
    // every tensor from its own Philox stream, computed here and uploaded once
    for (int k = 0; k < m->n_params; ++k) {
        const vp_param_info* p = &m->info[k];
        for (int64_t i = 0; i < p->numel; ++i) host[p->offset + i] = init_value(p, seed, i);
    }
    vp_status s = vp_upload(m->backend, flat, host, (size_t)m->n_weights * sizeof(float));
    free(host);
    return s;
}

vp_status vp_model_init(vp_model* m, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed) {
    VP_REQUIRE(m != NULL && b != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_model_init: model, backend or cfg is NULL");
    memset(m, 0, sizeof *m);
    VP_TRY(vp_model_cfg_check(cfg));
    m->cfg = *cfg;
    m->backend = b;
    m->precision = VP_PREC_TF32;
    // the table, then one flat buffer each for parameters and gradients
    int64_t total = 0;
    m->n_params = build_table(cfg, NULL, m->slot, &total);
    m->info = (vp_param_info*)calloc((size_t)m->n_params, sizeof(vp_param_info));
    VP_REQUIRE(m->info != NULL, VP_ERR_OOM, "vp_model_init: no host memory for the parameter table");
    build_table(cfg, m->info, m->slot, &total);
    m->n_weights = total;
    vp_mem mem = vp_backend_native_mem(b);
    size_t bytes = (size_t)total * sizeof(float);
    vp_status s = vp_buffer_alloc(b, mem, bytes, &m->param_buf);
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, bytes, &m->grad_buf);
    if (s == VP_OK) {
        m->params = vp_tensor_1d(m->param_buf.dev, VP_F32, mem, total);
        m->grads = vp_tensor_1d(m->grad_buf.dev, VP_F32, mem, total);
        s = vp_model_init_params(m, &m->params, seed);
    }
    if (s != VP_OK) vp_model_free(m);
    return s;
}

void vp_model_free(vp_model* m) {
    if (!m) return;
    if (m->backend) {
        vp_buffer_free(m->backend, &m->param_buf);
        vp_buffer_free(m->backend, &m->grad_buf);
    }
    free(m->info);
    memset(m, 0, sizeof *m);
}

const vp_param_info* vp_model_find_param(const vp_model* m, const char* name) {
    if (!m || !m->info || !name) return NULL;
    for (int i = 0; i < m->n_params; ++i)
        if (strcmp(m->info[i].name, name) == 0) return &m->info[i];
    return NULL;
}

vp_tensor vp_model_param_view(const vp_model* m, const vp_tensor* flat, const vp_param_info* p) {
    vp_tensor t;
    memset(&t, 0, sizeof t);
    if (!m || !flat || !p || !flat->data) return t;
    float* base = (float*)flat->data + p->offset;
    if (p->ndim == 2) return vp_tensor_2d(base, VP_F32, flat->mem, p->shape[0], p->shape[1]);
    return vp_tensor_1d(base, VP_F32, flat->mem, p->shape[0]);
}

vp_tensor vp_model_slot(const vp_model* m, const vp_tensor* flat, vp_pslot s) {
    int i = m->slot[s];
    if (i < 0) {
        vp_tensor t;
        memset(&t, 0, sizeof t);
        return t;
    }
    return vp_model_param_view(m, flat, &m->info[i]);
}

vp_tensor vp_model_slot_rows(const vp_model* m, const vp_tensor* flat, vp_pslot s, int64_t r0, int64_t n) {
    vp_tensor t = vp_model_slot(m, flat, s);
    if (!t.data) return t;
    int64_t cols = t.ndim == 2 ? t.shape[1] : 1;
    return vp_tensor_2d((float*)t.data + r0 * cols, VP_F32, t.mem, n, cols);
}
