/* Internal: the CUDA implementations of the model kernels (mops.h has their contracts),
 * gathered into vp_mops_cuda by cuda_heads.cu. Each launcher checks its preconditions,
 * runs on the backend's stream and checks the launch. */
#ifndef VULPES_MODEL_CUDA_MOPS_H
#define VULPES_MODEL_CUDA_MOPS_H

#include "model/mops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA table (cuda_heads.cu). */
extern const vp_mops vp_mops_cuda;

/* ---- cuda_mamba.cu ------------------------------------------------------------------ */
vp_status vp_cuda_conv_forward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                               const float* bias, float* xb_pre, float* xb, float* c_pre, float* c);
vp_status vp_cuda_conv_backward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                                const float* xb_pre, const float* c_pre, const float* d_xb, const float* d_c,
                                float* d_xbcdt, float* w_part, float* b_part);
vp_status vp_cuda_scan_forward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                               const float* xbcdt, const float* dt_bias, const float* A_log, const float* D,
                               float* dt, float* y);
vp_status vp_cuda_scan_backward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                                const float* xbcdt, const float* dt, const float* dt_bias, const float* A_log,
                                const float* D, const float* d_y, float* d_xb, float* d_c, float* d_xbcdt,
                                float* p_alog, float* p_d, float* p_dtb);

/* ---- cuda_heads.cu ------------------------------------------------------------------ */
vp_status vp_cuda_window_index(vp_backend* be, int64_t B, int K, const int32_t* bar, int32_t* idx);
vp_status vp_cuda_take_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);
vp_status vp_cuda_add_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);
vp_status vp_cuda_dueling_forward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, const float* v,
                                  const float* adv, float* logit);
vp_status vp_cuda_dueling_backward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                   const float* d_logit, float* d_v, float* d_adv);
vp_status vp_cuda_c51_q(vp_backend* be, int64_t rows, int Z, float v_min, float v_max, const float* logp,
                        float* q);
vp_status vp_cuda_iqn_cos(vp_backend* be, int64_t rows, int NC, const float* tau, float* out);
vp_status vp_cuda_iqn_mix_forward(vp_backend* be, int64_t B, int T, int H, const float* h, const float* phi,
                                  float* out);
vp_status vp_cuda_iqn_mix_backward(vp_backend* be, int64_t B, int T, int H, const float* h, const float* phi,
                                   const float* d_out, float* d_h, float* d_phi);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_CUDA_MOPS_H */
