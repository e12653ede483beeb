/* Internal: the pieces of the input modules (docs/modules.md, "Input modules"), each callable
 * alone for the tests; model_input.c strings them into the trunk's first layer. */
#ifndef VULPES_MODEL_INPUT_H
#define VULPES_MODEL_INPUT_H

#include "model/model_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Variable selection over R rows: a->x0 -> a->xs, the weights a->vsn_w and their column sums
 * a->vsn_wsum (model_vsn.c). */
vp_status vp_model_vsn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R);

/* Its backward from a->d_xs [R, F]: the vsn.* gradients. */
vp_status vp_model_vsn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R);

/* The spectral norms' power step on the parameters `params`: a->sn_* (model_sn.c). */
vp_status vp_model_sn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a);

/* The gradient through trunk.w<which + 1> / sigma, in place in m->grads (which 0 or 1). */
vp_status vp_model_sn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int which);

/* Zeroes the gradient slots of the spectral norm's u, v (the backward writes every slot). */
vp_status vp_model_sn_zero_grads(vp_model* m);

/* The KAN layer: a1 [R, H] from a->xs (model_kan.c). */
vp_status vp_model_kan_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R);

/* Its backward from d a1 [R, H]: the kan.* gradients, and d xs into a->d_xs when dx is set. */
vp_status vp_model_kan_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* da,
                                int64_t R, int dx);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_INPUT_H */
