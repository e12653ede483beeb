/* CPU kernel of the Q-denoise refinement's loss (hmops.h): the C51 expectation of each
 * branch's projected target against the refined Q of the taken head. */
#include <math.h>

#include "model/hmops.h"

vp_status vp_hcpu_qd_loss(vp_backend* be, int64_t B, int Z, float v_min, float v_max, const vp_branch_map* br,
                          const float* proj, const int32_t* actions, const float* w, const float* q, float* loss,
                          float* d_q) {
    (void)be;
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    const float dz = (v_max - v_min) / (float)(Z - 1), inv = 1.0f / ((float)B * (float)br->n);
    for (int64_t b = 0; b < B; ++b) {
        float sum = 0.0f;
        for (int a = 0; a < A; ++a) d_q[b * A + a] = 0.0f;
        int a0 = 0;
        for (int k = 0; k < br->n; ++k) {
            const int act = actions[b * br->n + k];
            if (act < 0 || act >= br->size[k]) {
                sum = NAN;
                a0 += br->size[k];
                continue;
            }
            // target: the expected value of the projected distribution
            const float* pr = proj + (b * br->n + k) * Z;
            float y = 0.0f;
            for (int z = 0; z < Z; ++z) y += (v_min + (float)z * dz) * pr[z];
            const float r = q[b * A + a0 + act] - y;
            sum += 0.5f * r * r;
            d_q[b * A + a0 + act] = w[b] * inv * r;
            a0 += br->size[k];
        }
        loss[b] = sum / (float)br->n;
    }
    return VP_OK;
}
