/* vulpes: the op interface. Every op runs on the backend given first, checks its
 * arguments (NULL, dtype, shape, memory kind) before doing anything, and returns a
 * status with a message naming the op and the bad argument. Shapes are row-major.
 * Outputs never alias inputs unless the op says so. On CUDA every op is asynchronous
 * on the backend's stream and may be captured into a graph. All reductions are
 * deterministic: the same inputs give the same bits on every run. */
#ifndef VULPES_OPS_H
#define VULPES_OPS_H

#include "vulpes/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- fill / copy / convert ----------------------------------------------------- */

/* Sets every element of an f32 tensor x (any shape) to `value`. */
vp_status vp_fill(vp_backend* b, vp_tensor* x, float value);

/* Sets every element of an i32 tensor x (any shape) to `value`. */
vp_status vp_fill_i32(vp_backend* b, vp_tensor* x, int32_t value);

/* dst = src element for element (same dtype, same numel; shapes may differ). */
vp_status vp_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst);

/* dst = src converted between f32 and bf16 (round to nearest even; NaN stays NaN), same numel. */
vp_status vp_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst);

/* ---- GEMM ---------------------------------------------------------------------- */

/* What is applied after alpha*op(A)op(B) + beta*C. */
typedef enum vp_epilogue {
    VP_EPI_NONE = 0,  /* nothing */
    VP_EPI_BIAS,      /* + bias[n] on every row */
    VP_EPI_BIAS_RELU, /* relu(... + bias[n]) */
    VP_EPI_COUNT
} vp_epilogue;

/* Arithmetic of the matrix product (accumulation is FP32 in all of them). */
typedef enum vp_precision {
    VP_PREC_FP32 = 0, /* full FP32 */
    VP_PREC_TF32,     /* TF32 tensor cores on CUDA; FP32 on the CPU */
    VP_PREC_BF16,     /* A and B are bf16 tensors; C, bias are f32 */
    VP_PREC_COUNT
} vp_precision;

/* One (strided-batched) matrix product C = epi(alpha * op(A) op(B) + beta * C).
 * op(A) is [m, k]: A is stored [m, k] or, with trans_a, [k, m]; op(B) is [k, n]: B is
 * stored [k, n] or, with trans_b, [n, k]; C is stored [m, n]. Batch i uses
 * A + i*stride_a, B + i*stride_b, C + i*stride_c and bias + i*stride_bias (elements; 0
 * broadcasts). A linear layer y = x W^T + b with W [out, in] is m = rows, n = out,
 * k = in, trans_b = 1. */
typedef struct vp_gemm_desc {
    int trans_a;            /* A stored transposed */
    int trans_b;            /* B stored transposed */
    int64_t m, n, k;        /* product extents */
    int64_t batch;          /* number of products (>= 1) */
    int64_t stride_a;       /* elements between batches of A */
    int64_t stride_b;       /* elements between batches of B */
    int64_t stride_c;       /* elements between batches of C */
    int64_t stride_bias;    /* elements between batches of the bias (0: one bias for all) */
    float alpha, beta;      /* scalars */
    vp_epilogue epilogue;   /* bias / relu */
    vp_precision precision; /* arithmetic */
} vp_gemm_desc;

/* A single product with alpha 1, beta 0, no epilogue, TF32. */
vp_gemm_desc vp_gemm_plain(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k);

/* Runs a GEMM. `bias` ([n], or with stride_bias > 0 at least (batch - 1) * stride_bias + n
 * elements, f32) is needed by the bias epilogues, else ignored (may be NULL). With beta == 0,
 * C is not read (NaN in C does not leak). */
vp_status vp_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A,
                  const vp_tensor* B, const vp_tensor* bias, vp_tensor* C);

/* ---- element-wise ----------------------------------------------------------------- */

/* Element-wise functions of vp_unary. */
typedef enum vp_unary_op {
    VP_UNARY_RELU = 0,  /* max(x, 0) */
    VP_UNARY_SILU,      /* x * sigmoid(x) */
    VP_UNARY_SOFTPLUS,  /* log(1 + exp(x)), linear above 20 (derivative 1 there) */
    VP_UNARY_SIGMOID,   /* 1 / (1 + exp(-x)) */
    VP_UNARY_EXP,       /* exp(x) */
    VP_UNARY_TANH,      /* tanh(x) */
    VP_UNARY_GELU,      /* x Phi(x) = 0.5 x erfc(-x / sqrt 2), the exact GELU (PyTorch's default) */
    VP_UNARY_COUNT
} vp_unary_op;

/* y = f(x) element-wise, x and y f32 of the same numel (y may alias x). NaN in gives NaN
 * out. */
vp_status vp_unary(vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y);

/* dx = dy * f'(x) element-wise, x, dy, dx f32 of the same numel (dx may alias dy). */
vp_status vp_unary_backward(vp_backend* b, vp_unary_op op, const vp_tensor* x,
                            const vp_tensor* dy, vp_tensor* dx);

/* Element-wise operators of vp_binary. */
typedef enum vp_binary_op {
    VP_BINARY_ADD = 0, /* a + b */
    VP_BINARY_SUB,     /* a - b */
    VP_BINARY_MUL,     /* a * b */
    VP_BINARY_COUNT
} vp_binary_op;

/* c = a op bb, a [m, n] f32; `bb` has a's numel, or n elements broadcast over a's rows;
 * c has a's numel and may alias a. */
vp_status vp_binary(vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb,
                    vp_tensor* c);

/* y = alpha * x + beta * y, x and y f32 of the same numel. With beta == 0, y is not read. */
vp_status vp_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y);

/* x *= s[0] (x f32, any shape), with the scalar s ([1], f32) read from the backend's
 * memory. */
vp_status vp_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s);

/* ---- softmax ----------------------------------------------------------------------- */

/* y[i, :] = softmax(x[i, :]) over the last dim; x, y [m, n] (y may alias x). */
vp_status vp_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y);

/* y[i, :] = log_softmax(x[i, :]); x, y [m, n] (y may alias x). */
vp_status vp_log_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y);

/* dx = y * (dy - sum(dy * y)) per row, given y = softmax(x); y, dy, dx [m, n]. */
vp_status vp_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy,
                              vp_tensor* dx);

/* dx = dy - exp(y) * sum(dy) per row, given y = log_softmax(x); y, dy, dx [m, n]. */
vp_status vp_log_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy,
                                  vp_tensor* dx);

/* ---- normalisation ------------------------------------------------------------------ */

/* y = (x - mean) * rstd * gamma + beta per row of x [m, n]; gamma, beta [n], y [m, n];
 * mean, rstd [m] are saved for the backward. rstd = 1 / sqrt(var + eps), var the biased
 * variance. */
vp_status vp_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma,
                       const vp_tensor* beta, float eps, vp_tensor* y, vp_tensor* mean,
                       vp_tensor* rstd);

/* y = max(0, LayerNorm(x)): vp_layernorm with the ReLU in the same pass (the same bits as
 * vp_layernorm then vp_unary RELU); mean, rstd saved as there. */
vp_status vp_layernorm_relu(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma,
                            const vp_tensor* beta, float eps, vp_tensor* y, vp_tensor* mean,
                            vp_tensor* rstd);

/* LayerNorm backward from dy [m, n] with the forward's x [m, n], gamma [n], mean and
 * rstd [m]: writes dx [m, n] and (overwrites) dgamma, dbeta [n]. */
vp_status vp_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                                const vp_tensor* gamma, const vp_tensor* mean,
                                const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,
                                vp_tensor* dbeta);

/* y = x * rstd * gamma per row of x [m, n]; gamma [n], y [m, n]; rstd = 1 / sqrt(mean(x^2)
 * + eps) saved [m]. */
vp_status vp_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps,
                     vp_tensor* y, vp_tensor* rstd);

/* RMSNorm backward from dy [m, n] with the forward's x [m, n], gamma [n] and rstd [m]:
 * writes dx [m, n] and (overwrites) dgamma [n]. */
vp_status vp_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                              const vp_tensor* gamma, const vp_tensor* rstd, vp_tensor* dx,
                              vp_tensor* dgamma);

/* ---- reductions (deterministic) ------------------------------------------------------- */

/* Reductions of vp_reduce_rows / _cols / _all. */
typedef enum vp_reduce_op {
    VP_REDUCE_SUM = 0, /* sum */
    VP_REDUCE_SUMSQ,   /* sum of squares */
    VP_REDUCE_MAX,     /* maximum (NaN propagates) */
    VP_REDUCE_COUNT
} vp_reduce_op;

/* out[i] = reduce(x[i, :]) over the last dim; x [m, n], out [m]. */
vp_status vp_reduce_rows(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* out[j] = reduce(x[:, j]) over the rows; x [m, n], out [n] (bias gradients). */
vp_status vp_reduce_cols(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* out[0] = reduce(all of x), x f32 of any shape; out is [1] f32 in the backend's memory
 * (device or mapped). */
vp_status vp_reduce_all(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* ---- gather ----------------------------------------------------------------------------- */

/* out[i, :] = src[idx[i], :]; src [r, n] f32, idx [m] i32, out [m, n]. A row whose index
 * is outside [0, r) is written as NaN (never read out of bounds). */
vp_status vp_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx,
                         vp_tensor* out);

/* ---- optimiser ---------------------------------------------------------------------------- */

/* AdamW hyper-parameters (PyTorch semantics). */
typedef struct vp_adamw_cfg {
    float lr;           /* learning rate */
    float beta1, beta2; /* moment decay */
    float eps;          /* added after the bias-corrected square root */
    float weight_decay; /* decoupled: p -= lr * wd * p before the Adam update */
} vp_adamw_cfg;

/* One fused AdamW update over flat buffers param, grad, m, v (same numel, f32).
 * `step` ([1] i32, backend memory) holds the 1-based step number (>= 1) used for bias
 * correction (see vp_step_increment). `grad_scale` ([1] f32, may be NULL) multiplies the
 * gradient first (the clip coefficient). */
vp_status vp_adamw(vp_backend* b, const vp_adamw_cfg* cfg, vp_tensor* param,
                   const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                   const vp_tensor* grad_scale);

/* vp_adamw with the learning rate read on the backend from lr ([1] f32, backend or mapped
 * memory) instead of cfg->lr (not read), so that a schedule moves it between graph launches
 * without a new capture; the same bits as vp_adamw when lr holds cfg->lr. */
vp_status vp_adamw_lr(vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr, vp_tensor* param,
                      const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                      const vp_tensor* grad_scale);

/* counter[0] += 1 on the backend, staying at INT32_MAX once there; counter [1] i32. */
vp_status vp_step_increment(vp_backend* b, vp_tensor* counter);

/* norm[0] = sqrt(sum(x^2)) over x (f32, any shape, e.g. the flat gradient) and
 * coef[0] = min(1, max_norm / (norm + 1e-6)) (PyTorch's clip_grad_norm_), both [1] f32 in
 * backend memory; nothing is read by the host. A NaN norm gives a NaN coef (never a
 * silent 1). */
vp_status vp_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, vp_tensor* norm,
                       vp_tensor* coef);

/* vp_clip_coef with the threshold read on the backend from max_norm ([1] f32, backend or
 * mapped memory, > 0 expected: it is not checked on the host); the same bits as vp_clip_coef
 * when it holds the same value. */
vp_status vp_clip_coef_at(vp_backend* b, const vp_tensor* x, const vp_tensor* max_norm, vp_tensor* norm,
                          vp_tensor* coef);

/* ---- attention ------------------------------------------------------------------------------ */

/* Longest query or key sequence of the attention ops. */
#define VP_ATTN_MAX_LEN 256

/* Largest head dimension of the attention ops. */
#define VP_ATTN_MAX_DIM 128

/* The shape of a scaled dot-product attention over `batch` independent sequences. */
typedef struct vp_attn_desc {
    int64_t batch; /* B: sequences (>= 1) */
    int heads;     /* NH: heads per sequence (>= 1) */
    int lq;        /* Lq: query positions (1..VP_ATTN_MAX_LEN) */
    int lk;        /* Lk: key positions (1..VP_ATTN_MAX_LEN) */
    int dim;       /* D: head dimension (1..VP_ATTN_MAX_DIM) */
    float scale;   /* logits = scale * q . k (1 / sqrt(D) as usual) */
    int causal;    /* 1: query i sees keys j <= i only (needs Lq == Lk) */
} vp_attn_desc;

/* out = softmax(scale q k^T [+ causal mask]) v per sequence and head, with the rows'
 * log-sum-exp of the scaled logits in lse (kept for the backward). q [B, Lq, NH * D],
 * k and v [B, Lk, NH * D], out [B, Lq, NH * D] (head h: columns h * D .. h * D + D - 1 of a
 * row), lse [B, NH, Lq]; all f32.
 *   q, k, v, out: any leading shape of B * L rows with a last extent of NH * D;
 *   lse:          any shape of B * NH * Lq elements; lse[b, h, i] = log sum_j exp(s_ij),
 *                 s_ij = scale q_i . k_j over the keys j that query i sees;
 *   causal:       query i sees keys 0 .. i, so no row is ever fully masked (key 0 stays);
 *   softmax:      shifted by the row's largest logit (no overflow for large logits);
 *   out, lse may not overlap the inputs or each other (refused). CPU: double sums; CUDA: one
 *   fused kernel, FP32 with an online softmax. Errors: VP_ERR_INVALID_ARG (NULL, a bad scale, a
 *   wrong dtype, an overlap), VP_ERR_SHAPE
 *   (a descriptor out of its ranges, a tensor of the wrong size), VP_ERR_DEVICE. */
vp_status vp_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                       const vp_tensor* v, vp_tensor* out, vp_tensor* lse);

/* The gradients dq, dk, dv (shapes of q, k, v; overwritten) of vp_attention given dout
 * (shape of out), from its inputs and its outputs out and lse.
 *   P_ij = exp(s_ij - lse_i) is recomputed from lse (no [Lq, Lk] matrix is kept);
 *   delta_i = dout_i . out_i, dS_ij = P_ij (dout_i . v_j - delta_i);
 *   dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i;
 *   every row is summed in a fixed order (the same bits on every run) and needs no workspace;
 *   dq, dk, dv may not overlap each other or the inputs (refused). Errors as vp_attention's. */
vp_status vp_attention_backward(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                                const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse,
                                const vp_tensor* dout, vp_tensor* dq, vp_tensor* dk, vp_tensor* dv);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_OPS_H */
