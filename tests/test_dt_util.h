/* Helpers of the Decision Transformer's tests: a small network on the CPU (no Mamba2: the
 * encoder's own tests cover it), a host batch, and norm-wise relative errors. */
#ifndef VP_TEST_DT_UTIL_H
#define VP_TEST_DT_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dt_impl.h"
#include "model/model_internal.h"
#include "vp_test.h"

/* An encoder config of width H without Mamba2, portfolio P, features F. */
static inline vp_model_cfg vpt_dt_model_cfg(int H, int P, int F) {
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = F, m.n_portfolio = P, m.window = 4, m.hidden = H, m.encoder = VP_ENCODER_NONE;
    m.mamba_head_dim = H, m.head_hidden = 8, m.n_atoms = 11, m.iqn_cos = 8;
    return m;
}

/* A transformer shape. */
static inline vp_dt_dims vpt_dt_dims(int K, int D, int NH, int layers, int TM) {
    vp_dt_dims d;
    memset(&d, 0, sizeof d);
    d.K = K, d.L = 3 * K, d.D = D, d.NH = NH, d.layers = layers, d.TM = TM;
    return d;
}

/* A host batch of B sequences of K steps, P portfolio columns (zeroed; free with vpt_dt_batch_free). */
static inline vp_dt_batch vpt_dt_batch(int64_t B, int K, int P) {
    const int64_t BK = B * K;
    vp_dt_batch x;
    x.bar = vp_tensor_1d(calloc((size_t)BK, 4), VP_I32, VP_MEM_HOST, BK);
    x.port = vp_tensor_2d(calloc((size_t)(BK * P), 4), VP_F32, VP_MEM_HOST, BK, P);
    x.act = vp_tensor_2d(calloc((size_t)(BK * 4), 4), VP_I32, VP_MEM_HOST, BK, 4);
    x.rtg = vp_tensor_1d(calloc((size_t)BK, 4), VP_F32, VP_MEM_HOST, BK);
    x.ts = vp_tensor_1d(calloc((size_t)BK, 4), VP_I32, VP_MEM_HOST, BK);
    x.valid = vp_tensor_1d(calloc((size_t)BK, 4), VP_F32, VP_MEM_HOST, BK);
    return x;
}

static inline void vpt_dt_batch_free(vp_dt_batch* x) {
    free(x->bar.data), free(x->port.data), free(x->act.data), free(x->rtg.data), free(x->ts.data), free(x->valid.data);
}

/* Fills a batch with random steps from seed (choices within the env's branches), every step valid. */
static inline void vpt_dt_batch_random(vp_dt_batch* x, int P, uint64_t seed) {
    const int64_t BK = vp_tensor_numel(&x->rtg);
    const vp_action_layout lay = vp_action_layout_env();
    for (int64_t r = 0; r < BK; ++r) {
        for (int k = 0; k < P; ++k) ((float*)x->port.data)[r * P + k] = vp_rng_normal(seed, 1, (uint64_t)(r * P + k));
        for (int br = 0; br < 4; ++br) {
            const float u = vp_rng_uniform(seed, 2, (uint64_t)(r * 4 + br));
            int a = (int)(u * (float)lay.size[br]);
            ((int32_t*)x->act.data)[r * 4 + br] = a >= lay.size[br] ? lay.size[br] - 1 : a;
        }
        ((float*)x->rtg.data)[r] = 2.0f * vp_rng_normal(seed, 3, (uint64_t)r);
        ((int32_t*)x->ts.data)[r] = (int32_t)r;
        ((float*)x->valid.data)[r] = 1.0f;
    }
}

/* Norm-wise relative error of n floats against want. */
static inline double vpt_rel(const float* got, const float* want, int64_t n) {
    double d = 0.0, w = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double e = (double)got[i] - (double)want[i];
        d += e * e;
        w += (double)want[i] * want[i];
    }
    return isnan(d) ? INFINITY : sqrt(d) / fmax(sqrt(w), 1e-30);
}

#endif /* VP_TEST_DT_UTIL_H */
