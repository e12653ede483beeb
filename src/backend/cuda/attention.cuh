/* CUDA scaled dot-product attention, forward and backward, for the short sequences of the
 * models (L <= VP_ATTN_MAX_LEN, D <= VP_ATTN_MAX_DIM): launchers; arguments checked by
 * ops_attention.c. Neither allocates nor synchronises (graph-capturable). */
#ifndef VP_CUDA_ATTENTION_CUH
#define VP_CUDA_ATTENTION_CUH

#include "common.cuh"

/* out, lse = attention(q, k, v) (vp_attention): one fused kernel, online softmax in FP32. */
vp_status vp_cuda_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                            const vp_tensor* v, vp_tensor* out, vp_tensor* lse);

/* dq, dk, dv of vp_attention (vp_attention_backward): P recomputed from lse, one kernel for
 * dq (query-major) and one for dk, dv (key-major), each row summed in a fixed order. */
vp_status vp_cuda_attention_backward(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                                     const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse,
                                     const vp_tensor* dout, vp_tensor* dq, vp_tensor* dk, vp_tensor* dv);

#endif /* VP_CUDA_ATTENTION_CUH */
