/* CPU kernel of the cross-branch messages (hmops.h): the per-branch advantage blocks to the
 * advantage layout and back. */
#include "model/hmops.h"

vp_status vp_hcpu_xb_pack(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, int to_adv, const float* src,
                          float* dst) {
    (void)be;
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    int o = 0;
    for (int k = 0; k < br->n; ++k) {
        const int64_t w = (int64_t)br->size[k] * Z;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t j = 0; j < w; ++j) {
                const int64_t blk = B * o * Z + b * w + j, adv = b * A * Z + (int64_t)o * Z + j;
                if (to_adv)
                    dst[adv] = src[blk];
                else
                    dst[blk] = src[adv];
            }
        o += br->size[k];
    }
    return VP_OK;
}
