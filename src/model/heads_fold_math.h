/* Internal: the C51 output layers folded for Q alone (mops.h: c51_fold, c51_fold_q), shared by
 * the CPU and CUDA forms so both write and read one layout with one rounding.
 *
 * The dueling logit of action a at atom z is linear in the two output layers:
 *   v[z] + adv[a, z] - mean_{a' in branch(a)} adv[a', z]
 *     = (v1 . W_v[z] + b_v[z]) + (ah . (W_a[a, z] - mean W_a[., z]) + (b_a[a, z] - mean b_a[., z])),
 * so a pass that wants Q alone can take each action's logits from one product with folded
 * weights, without the [B, A Z] advantage rows. The folded buffer holds T = 1 + A tiles: tile 0
 * the value layer, tile 1 + a action a's folded advantage layer. Each tile is ZN = pad8(Z) atoms
 * by HH inputs (atoms Z .. ZN - 1 zero) in the order a TF32 tensor-core product (mma m16n8k8,
 * B operand "col") reads them: k-step k / 8, atom tile n / 8, lane (n % 8) 4 + k % 4, register
 * (k % 8) / 4; the weights rounded to TF32 once. After the T weight tiles, T rows of ZN biases
 * (FP32, atoms past Z zero). */
#ifndef VULPES_MODEL_HEADS_FOLD_MATH_H
#define VULPES_MODEL_HEADS_FOLD_MATH_H

#include <stdint.h>
#include <string.h>

#include "vulpes/defs.h"

/* n rounded up to a multiple of 8: a tile's atoms (ZN). */
VP_HD int64_t vp_c51f_zn(int64_t n) { return (n + 7) / 8 * 8; }

/* Floats of one tile's weights: ZN x HH. */
VP_HD int64_t vp_c51f_tile(int Z, int HH) { return vp_c51f_zn(Z) * HH; }

/* Floats of the folded buffer of A actions: 1 + A weight tiles, then 1 + A bias rows of ZN. */
VP_HD int64_t vp_c51f_floats(int Z, int HH, int A) { return (int64_t)(1 + A) * (vp_c51f_tile(Z, HH) + vp_c51f_zn(Z)); }

/* Where weight (atom n, input k) lies inside its tile (HH a multiple of 8). */
VP_HD int64_t vp_c51f_at(int Z, int n, int k) {
    const int64_t nt = vp_c51f_zn(Z) / 8;
    return (((int64_t)(k >> 3) * nt + (n >> 3)) * 32 + (n & 7) * 4 + (k & 3)) * 2 + ((k >> 2) & 1);
}

/* x rounded to TF32 (10 explicit mantissa bits): to nearest, ties away from zero, as
 * cvt.rna.tf32.f32 does; NaN and the infinities as they are. Integer arithmetic only, so the
 * CPU and the GPU give the same bits. */
VP_HD float vp_tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif /* VULPES_MODEL_HEADS_FOLD_MATH_H */
