/* CPU kernels of the stochastic depth (hmops.h): the per-sample scale and the residual, and
 * the scale of the branch's gradient. */
#include "model/hmops.h"

vp_status vp_hcpu_sd_forward(vp_backend* be, int64_t B, int64_t H, float p, const float* u, const float* last,
                             const float* o, float* scale, float* e) {
    (void)be;
    const float keep = 1.0f / (1.0f - p);
    for (int64_t b = 0; b < B; ++b) {
        // the branch survives when u >= p, scaled to keep its expected value
        const float s = u[b] >= p ? keep : 0.0f;
        scale[b] = s;
        for (int64_t j = 0; j < H; ++j) e[b * H + j] = last[b * H + j] + s * o[b * H + j];
    }
    return VP_OK;
}

vp_status vp_hcpu_sd_backward(vp_backend* be, int64_t B, int64_t H, const float* scale, const float* de,
                              float* d_o) {
    (void)be;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) d_o[b * H + j] = scale[b] * de[b * H + j];
    return VP_OK;
}
