/* CPU forms of the model's fused head kernels (mops.h: c51_head, port_add). Each is the
 * sequence of kernels and ops the CUDA pass fuses, so the CPU's bits are those of calling
 * them one by one. */
#include <string.h>

#include "model/cpu_mops.h"
#include "vulpes/ops.h"

vp_status vp_cpu_c51_head(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, float v_min, float v_max,
                          const float* v, int64_t ldv, const float* adv, int64_t ldadv, float* logp, float* q) {
    VP_REQUIRE(br && br->n >= 1 && v && adv && logp && q && B >= 1 && Z >= 2, VP_ERR_INVALID_ARG,
               "cpu c51_head: bad arguments");
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    VP_REQUIRE(ldv == Z && ldadv == (int64_t)A * Z, VP_ERR_INVALID_ARG,
               "cpu c51_head: rows of %lld and %lld floats; the CPU's form takes dense rows (%d and %d)", (long long)ldv,
               (long long)ldadv, Z, A * Z);
    VP_TRY(vp_cpu_dueling_forward(be, B, Z, br, v, adv, logp));
    vp_tensor lp = vp_tensor_2d(logp, VP_F32, VP_MEM_HOST, B * A, Z);
    VP_TRY(vp_log_softmax(be, &lp, &lp));
    return vp_cpu_c51_q(be, B * A, Z, v_min, v_max, logp, q);
}

vp_status vp_cpu_port_add(vp_backend* be, int64_t B, int H, int P, const float* e, const float* p, const float* W,
                          const float* bias, float* h) {
    VP_REQUIRE(e && p && W && bias && h && B >= 1 && H >= 1 && P >= 1, VP_ERR_INVALID_ARG,
               "cpu port_add: bad arguments");
    vp_tensor te = vp_tensor_2d((void*)e, VP_F32, VP_MEM_HOST, B, H), th = vp_tensor_2d(h, VP_F32, VP_MEM_HOST, B, H);
    vp_tensor tp = vp_tensor_2d((void*)p, VP_F32, VP_MEM_HOST, B, P), tw = vp_tensor_2d((void*)W, VP_F32, VP_MEM_HOST, H, P);
    vp_tensor tb = vp_tensor_1d((void*)bias, VP_F32, VP_MEM_HOST, H);
    if (e != h) VP_TRY(vp_copy(be, &te, &th));
    // h = p W^T + bias + h, the model's linear layer (model_linear.c) with beta 1
    vp_gemm_desc d = vp_gemm_plain(0, 1, B, H, P);
    d.beta = 1.0f;
    d.epilogue = VP_EPI_BIAS;
    d.precision = VP_PREC_FP32;
    return vp_gemm(be, &d, &tp, &tw, &tb, &th);
}

vp_status vp_cpu_c51_pad(vp_backend* be, int Z, int AZ, int HH, const float* v2w, const float* v2b, const float* a2w,
                         const float* a2b, float* out) {
    (void)be;
    VP_REQUIRE(Z >= 1 && AZ >= 1 && HH >= 1 && v2w && v2b && a2w && a2b && out, VP_ERR_INVALID_ARG,
               "cpu c51_pad: bad arguments");
    const int64_t Zp = vp_pad4(Z), AZp = vp_pad4(AZ);
    memcpy(out, v2w, (size_t)Z * (size_t)HH * sizeof(float));
    memcpy(out + Zp * HH, v2b, (size_t)Z * sizeof(float));
    memcpy(out + Zp * HH + Zp, a2w, (size_t)AZ * (size_t)HH * sizeof(float));
    memcpy(out + Zp * HH + Zp + AZp * HH, a2b, (size_t)AZ * sizeof(float));
    return VP_OK;
}
