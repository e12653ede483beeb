/* Optimiser ops on the CPU: fused AdamW (PyTorch semantics), the step counter, and the
 * global grad-norm clip coefficient. Scalars (the step, the clip coefficient and, when
 * given, the learning rate and the clip threshold) are read from memory, as on CUDA. */
#include <math.h>
#include <stdint.h>

#include "cpu_impl.h"

vp_status vp_cpu_adamw(vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr_t, vp_tensor* param,
                       const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                       const vp_tensor* grad_scale) {
    (void)b;
    /* the learning rate: cfg's, or the scalar in memory (a schedule's) */
    const float lr = lr_t ? ((const float*)lr_t->data)[0] : cfg->lr;
    float* p = (float*)param->data;          /* [numel] */
    const float* g = (const float*)grad->data; /* [numel] */
    float* mp = (float*)m->data;             /* [numel] first moment */
    float* vp = (float*)v->data;             /* [numel] second moment */
    const int64_t n = vp_tensor_numel(param);
    /* bias corrections from the 1-based step t, as PyTorch computes them */
    const int32_t t = ((const int32_t*)step->data)[0];
    const double bc1 = 1.0 - pow((double)cfg->beta1, (double)t);
    const double bc2 = 1.0 - pow((double)cfg->beta2, (double)t);
    const float step_size = (float)((double)lr / bc1);
    const float bc2_sqrt = (float)sqrt(bc2);
    const float decay = 1.0f - lr * cfg->weight_decay;
    const float scale = grad_scale ? ((const float*)grad_scale->data)[0] : 1.0f;
    const float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps;
    for (int64_t i = 0; i < n; ++i) {
        /* scaled gradient, moments */
        const float gi = g[i] * scale;
        mp[i] = b1 * mp[i] + (1.0f - b1) * gi;
        vp[i] = b2 * vp[i] + (1.0f - b2) * gi * gi;
        /* decoupled decay, then the Adam step with eps after the corrected root */
        const float pi = p[i] * decay;
        p[i] = pi - step_size * mp[i] / (sqrtf(vp[i]) / bc2_sqrt + eps);
    }
    return VP_OK;
}

vp_status vp_cpu_step_increment(vp_backend* b, vp_tensor* counter) {
    (void)b;
    /* held at INT32_MAX: the bias corrections are 1 long before, so nothing changes there */
    int32_t* c = (int32_t*)counter->data;
    if (c[0] < INT32_MAX) c[0] += 1;
    return VP_OK;
}

vp_status vp_cpu_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm_arg, const vp_tensor* max_norm_t,
                           vp_tensor* norm, vp_tensor* coef) {
    (void)b;
    const float max_norm = max_norm_t ? ((const float*)max_norm_t->data)[0] : max_norm_arg;
    const float* xp = (const float*)x->data; /* [numel] */
    const int64_t n = vp_tensor_numel(x);
    /* global L2 norm, accumulated in double */
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)xp[i] * (double)xp[i];
    const float nrm = (float)sqrt(ss);
    /* min(1, max_norm / (norm + 1e-6)); a NaN norm gives a NaN coefficient */
    const float c = max_norm / (nrm + 1e-6f);
    ((float*)norm->data)[0] = nrm;
    ((float*)coef->data)[0] = c > 1.0f ? 1.0f : c;
    return VP_OK;
}
