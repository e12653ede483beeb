/* Internal: the kernels of the input modules (docs/modules.md, "Input modules"): variable
 * selection (cpu_vsn.c / cuda_vsn.cu), spectral normalisation (cpu_sn.c / cuda_sn.cu) and the
 * KAN layer (cpu_kan.c / cuda_kan.cu), one table per backend kind as in mops.h. Pointers are
 * the backend's memory, row-major f32; the model code checks shapes before calling. The
 * per-element math is written once in model_input_math.h. */
#ifndef VULPES_MODEL_INOPS_H
#define VULPES_MODEL_INOPS_H

#include <stdint.h>

#include "backend/kit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- variable selection ------------------------------------------------------------------- */

/* x [n] = elu(x) in place (alpha 1). */
typedef vp_status vp_inops_vsn_elu_fn(vp_backend* be, int64_t n, float* x);

/* d [n] *= elu'(.) in place, from the ELU's output y [n]: 1 where y > 0, y + 1 elsewhere. */
typedef vp_status vp_inops_vsn_elu_backward_fn(vp_backend* be, int64_t n, const float* y, float* d);

/* pre[r, j] = x[r, j] + gs[r, j] sigmoid(gs[r, F + j]); x, pre [R, F]; gs [R, 2F]. */
typedef vp_status vp_inops_vsn_gate_fn(vp_backend* be, int64_t R, int F, const float* x, const float* gs,
                                       float* pre);

/* Its backward: d_gs[r, j] = d_pre sigmoid(l), d_gs[r, F + j] = d_pre v sigmoid(l) (1 - sigmoid(l))
 * with v = gs[r, j], l = gs[r, F + j]; d_pre [R, F], d_gs [R, 2F] (written). */
typedef vp_status vp_inops_vsn_gate_backward_fn(vp_backend* be, int64_t R, int F, const float* gs,
                                                const float* d_pre, float* d_gs);

/* w[r, :] = softmax(logit[r, :]); xs[r, j] = F w[r, j] x[r, j]. logit, w, x, xs [R, F]. */
typedef vp_status vp_inops_vsn_select_fn(vp_backend* be, int64_t R, int F, const float* logit, const float* x,
                                         float* w, float* xs);

/* Its backward to the logits: g_j = F x[r, j] d_xs[r, j]; d_logit[r, j] = w_j (g_j - sum_i w_i g_i).
 * w, x, d_xs, d_logit [R, F] (d_logit may alias d_xs). */
typedef vp_status vp_inops_vsn_select_backward_fn(vp_backend* be, int64_t R, int F, const float* w,
                                                  const float* x, const float* d_xs, float* d_logit);

/* ---- spectral normalisation (PyTorch's spectral_norm, one power iteration) ---------------- */

/* From W [rows, cols] and the kept u0 [rows]: v = normalize(W^T u0), t = W v, u = normalize(t),
 * sigma = u . t (normalize(x) = x / max(||x||, 1e-12)); writes u [rows], v [cols], sigma [1]
 * and w_sn = W / sigma [rows, cols]. */
typedef vp_status vp_inops_sn_forward_fn(vp_backend* be, int64_t rows, int64_t cols, const float* W,
                                         const float* u0, float* u, float* v, float* sigma, float* w_sn);

/* The gradient through W / sigma with u, v held constant (PyTorch's autograd of spectral_norm):
 * g [rows, cols] holds dL/d(W / sigma) and becomes g / sigma - (sum(g W) / sigma^2) u v^T. */
typedef vp_status vp_inops_sn_backward_fn(vp_backend* be, int64_t rows, int64_t cols, const float* W,
                                          const float* u, const float* v, const float* sigma, float* g);

/* ---- the KAN layer (efficient-kan) ------------------------------------------------------------ */

/* The KAN grid: G intervals of width h = 2 range / G on [-range, range], extended by `order`
 * intervals on each side (knots t_i = -range + (i - order) h, i = 0 .. G + 2 order). */
typedef struct vp_kan_dims {
    int64_t rows;  /* R */
    int in;        /* F input features */
    int grid;      /* G */
    int order;     /* k; KC = G + k bases per feature */
    float range;   /* grid half-width */
} vp_kan_dims;

/* silu [R, F] = silu(x); basis [R, F * KC]: the order-k B-spline bases of each x[r, i] on the
 * grid (Cox-de Boor, efficient-kan's b_splines), feature-major: basis[r, i * KC + c]. */
typedef vp_status vp_inops_kan_basis_fn(vp_backend* be, const vp_kan_dims* d, const float* x, float* silu,
                                        float* basis);

/* Input gradient (written): d_x[r, i] = d_silu[r, i] silu'(x) + sum_c d_basis[r, i KC + c] dB_c/dx
 * at x = x[r, i]; x, d_silu, d_x [R, F], d_basis [R, F * KC]. */
typedef vp_status vp_inops_kan_input_backward_fn(vp_backend* be, const vp_kan_dims* d, const float* x,
                                                 const float* d_silu, const float* d_basis, float* d_x);

/* w[o, i * KC + c] = spline_w[o, i * KC + c] scaler[o, i]: spline_w, w [H, F * KC]; scaler [H, F]. */
typedef vp_status vp_inops_kan_scale_fn(vp_backend* be, int64_t H, int F, int KC, const float* spline_w,
                                        const float* scaler, float* w);

/* Its backward from d_w [H, F * KC]: g_spline = d_w scaler, g_scaler[o, i] = sum_c d_w spline_w. */
typedef vp_status vp_inops_kan_scale_backward_fn(vp_backend* be, int64_t H, int F, int KC, const float* spline_w,
                                                 const float* scaler, const float* d_w, float* g_spline,
                                                 float* g_scaler);

/* Every kernel by name, in table order (backend/kit.h's list form). */
#define VP_INOPS_KERNELS(X, f, i)                                                                 \
    X(f, i, vsn_elu) X(f, i, vsn_elu_backward) X(f, i, vsn_gate) X(f, i, vsn_gate_backward)       \
    X(f, i, vsn_select) X(f, i, vsn_select_backward) X(f, i, sn_forward) X(f, i, sn_backward)     \
    X(f, i, kan_basis) X(f, i, kan_input_backward) X(f, i, kan_scale) X(f, i, kan_scale_backward)

/* Declares prefix_<kernel> for every kernel. */
#define VP_INOPS_DECLARE(prefix) VP_KERNEL_DECLARE(VP_INOPS_KERNELS, vp_inops, prefix)

/* The initialiser of a table whose kernels are prefix_<kernel>. */
#define VP_INOPS_TABLE(prefix) VP_KERNEL_TABLE(VP_INOPS_KERNELS, vp_inops, prefix)

/* One backend's input-module kernels. */
typedef struct vp_inops {
    VP_KERNEL_FIELDS(VP_INOPS_KERNELS, vp_inops)
} vp_inops;

VP_INOPS_DECLARE(vp_cpu)

#ifdef VP_HAVE_CUDA
VP_INOPS_DECLARE(vp_cuda)
#endif

/* The CPU table (inops.c). */
extern const vp_inops vp_inops_cpu;

/* The CUDA table (cuda_inops.cu; CUDA builds only). */
extern const vp_inops vp_inops_cuda;

/* The table for a backend; VP_ERR_UNSUPPORTED when its kind has none. */
vp_status vp_inops_get(const vp_backend* be, const vp_inops** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_INOPS_H */
