/* The public optimiser ops (AdamW, the step counter, the gradient-norm clip): check every
 * argument, then call the backend's table. */
#include <math.h>

#include "backend_impl.h"
#include "ops_check.h"

/* ---- optimiser ------------------------------------------------------------------------------------ */

/* Checks AdamW's settings other than lr and its tensors (fn names the caller). */
static vp_status adamw_check(const char* fn, vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* param,
                             const vp_tensor* grad, const vp_tensor* m, const vp_tensor* v, const vp_tensor* step,
                             const vp_tensor* grad_scale) {
    VP_REQUIRE(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f && cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f, VP_ERR_INVALID_ARG,
               "%s: betas (%g, %g) must lie in [0, 1)", fn, (double)cfg->beta1, (double)cfg->beta2);
    VP_REQUIRE(cfg->eps > 0.0f, VP_ERR_INVALID_ARG, "%s: eps %g must be positive", fn, (double)cfg->eps);
    VP_REQUIRE(cfg->weight_decay >= 0.0f, VP_ERR_INVALID_ARG, "%s: weight_decay %g < 0", fn,
               (double)cfg->weight_decay);
    VP_TRY(vp_tensor_check(fn, "param", b, param, VP_F32));
    VP_TRY(check_like(fn, b, "param", param, "grad", grad));
    VP_TRY(check_like(fn, b, "param", param, "m", m));
    VP_TRY(check_like(fn, b, "param", param, "v", v));
    VP_TRY(vp_tensor_check_numel(fn, "step", b, step, VP_I32, 1));
    return grad_scale ? vp_tensor_check_numel(fn, "grad_scale", b, grad_scale, VP_F32, 1) : VP_OK;
}

vp_status vp_adamw(vp_backend* b, const vp_adamw_cfg* cfg, vp_tensor* param, const vp_tensor* grad, vp_tensor* m,
                   vp_tensor* v, const vp_tensor* step, const vp_tensor* grad_scale) {
    CHECK_B();
    VP_REQUIRE(cfg != NULL, VP_ERR_INVALID_ARG, "vp_adamw: cfg is NULL");
    VP_REQUIRE(cfg->lr >= 0.0f && isfinite(cfg->lr), VP_ERR_INVALID_ARG, "vp_adamw: lr %g", (double)cfg->lr);
    VP_TRY(adamw_check(__func__, b, cfg, param, grad, m, v, step, grad_scale));
    return b->ops->adamw(b, cfg, NULL, param, grad, m, v, step, grad_scale);
}

vp_status vp_adamw_lr(vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr, vp_tensor* param,
                      const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                      const vp_tensor* grad_scale) {
    CHECK_B();
    VP_REQUIRE(cfg != NULL, VP_ERR_INVALID_ARG, "vp_adamw_lr: cfg is NULL");
    CHECK_T_NUMEL(lr, VP_F32, 1);
    VP_TRY(adamw_check(__func__, b, cfg, param, grad, m, v, step, grad_scale));
    return b->ops->adamw(b, cfg, lr, param, grad, m, v, step, grad_scale);
}

vp_status vp_step_increment(vp_backend* b, vp_tensor* counter) {
    CHECK_B();
    CHECK_T_NUMEL(counter, VP_I32, 1);
    return b->ops->step_increment(b, counter);
}

vp_status vp_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, vp_tensor* norm, vp_tensor* coef) {
    CHECK_B();
    VP_REQUIRE(max_norm > 0.0f, VP_ERR_INVALID_ARG, "vp_clip_coef: max_norm %g must be positive", (double)max_norm);
    CHECK_T(x, VP_F32);
    CHECK_T_NUMEL(norm, VP_F32, 1);
    CHECK_T_NUMEL(coef, VP_F32, 1);
    return b->ops->clip_coef(b, x, max_norm, NULL, norm, coef);
}

vp_status vp_clip_coef_at(vp_backend* b, const vp_tensor* x, const vp_tensor* max_norm, vp_tensor* norm,
                          vp_tensor* coef) {
    CHECK_B();
    CHECK_T_NUMEL(max_norm, VP_F32, 1);
    CHECK_T(x, VP_F32);
    CHECK_T_NUMEL(norm, VP_F32, 1);
    CHECK_T_NUMEL(coef, VP_F32, 1);
    return b->ops->clip_coef(b, x, 1.0f, max_norm, norm, coef);
}
