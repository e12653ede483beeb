/* CPU forms of the folded C51 output layers (mops.h: c51_fold, c51_fold_q; the layout in
 * heads_fold_math.h): the fold itself, the same bits as CUDA's, and Q from it as plain loops,
 * the reference of CUDA's tensor-core pass. */
#include <math.h>

#include "model/cpu_mops.h"
#include "model/heads_fold_math.h"

vp_status vp_cpu_c51_fold(vp_backend* be, int HH, int Z, const vp_branch_map* br, const float* v2w, const float* v2b,
                          const float* a2w, const float* a2b, float* out) {
    (void)be;
    const int A = vp_branch_map_actions(br);
    VP_REQUIRE(A >= 1 && HH >= 8 && HH % 8 == 0 && Z >= 1 && v2w && v2b && a2w && a2b && out, VP_ERR_INVALID_ARG,
               "cpu c51_fold: bad arguments (HH %d: a multiple of 8; Z %d)", HH, Z);
    const int ZN = (int)vp_c51f_zn(Z);
    const int64_t tile = vp_c51f_tile(Z, HH);
    float* bias = out + (int64_t)(1 + A) * tile;
    for (int n = 0; n < ZN; ++n)
        for (int k = 0; k < HH; ++k) out[vp_c51f_at(Z, n, k)] = n < Z ? vp_tf32(v2w[(int64_t)n * HH + k]) : 0.0f;
    for (int n = 0; n < ZN; ++n) bias[n] = n < Z ? v2b[n] : 0.0f;
    int a0 = 0;
    for (int br_i = 0; br_i < br->n; ++br_i) {
        const int na = br->size[br_i];
        for (int j = 0; j < na; ++j) {
            const int a = a0 + j;
            float* w = out + (int64_t)(1 + a) * tile;
            float* b = bias + (int64_t)(1 + a) * ZN;
            for (int n = 0; n < ZN; ++n) {
                for (int k = 0; k < HH; ++k) {
                    float x = 0.0f;
                    if (n < Z) {
                        float s = 0.0f;
                        for (int i = 0; i < na; ++i) s += a2w[((int64_t)(a0 + i) * Z + n) * HH + k];
                        x = vp_tf32(a2w[((int64_t)a * Z + n) * HH + k] - s / (float)na);
                    }
                    w[vp_c51f_at(Z, n, k)] = x;
                }
                float sb = 0.0f;
                if (n < Z)
                    for (int i = 0; i < na; ++i) sb += a2b[(int64_t)(a0 + i) * Z + n];
                b[n] = n < Z ? a2b[(int64_t)a * Z + n] - sb / (float)na : 0.0f;
            }
        }
        a0 += na;
    }
    return VP_OK;
}

/* x . W[n] over HH inputs of a tile in the folded order, x rounded to TF32. */
static float tile_dot(const float* x, const float* w, int Z, int n, int HH) {
    float acc = 0.0f;
    for (int k = 0; k < HH; ++k) acc += vp_tf32(x[k]) * w[vp_c51f_at(Z, n, k)];
    return acc;
}

vp_status vp_cpu_c51_fold_q(vp_backend* be, int64_t B, int HH, int Z, const vp_branch_map* br, float v_min,
                            float v_max, const float* v1, const float* ah, int64_t ld, const float* fold, float* q) {
    (void)be;
    const int A = vp_branch_map_actions(br);
    VP_REQUIRE(A >= 1 && B >= 1 && HH >= 8 && HH % 8 == 0 && Z >= 2 && Z <= 4096 && ld >= HH && v1 && ah && fold && q,
               VP_ERR_INVALID_ARG, "cpu c51_fold_q: bad arguments (B %lld, HH %d, Z %d, ld %lld)", (long long)B, HH,
               Z, (long long)ld);
    const int ZN = (int)vp_c51f_zn(Z);
    const int64_t tile = vp_c51f_tile(Z, HH);
    const float* bias = fold + (int64_t)(1 + A) * tile;
    const float dz = (v_max - v_min) / (float)(Z - 1);
    float vz[4096], lz[4096];
    for (int64_t b = 0; b < B; ++b) {
        const float *xv = v1 + b * ld, *xa = ah + b * ld;
        for (int n = 0; n < Z; ++n) vz[n] = bias[n] + tile_dot(xv, fold, Z, n, HH);
        for (int a = 0; a < A; ++a) {
            const float* w = fold + (int64_t)(1 + a) * tile;
            const float* ba = bias + (int64_t)(1 + a) * ZN;
            float mx = -INFINITY;
            for (int n = 0; n < Z; ++n) {
                lz[n] = vz[n] + (ba[n] + tile_dot(xa, w, Z, n, HH));
                mx = (lz[n] > mx || lz[n] != lz[n]) ? lz[n] : mx;
            }
            float s = 0.0f, t = 0.0f;
            for (int n = 0; n < Z; ++n) {
                const float e = expf(lz[n] - mx);
                s += e;
                t += e * (v_min + (float)n * dz);
            }
            q[b * A + a] = t / s;
        }
    }
    return VP_OK;
}
