/* CPU kernel of the risk-budget head's loss (hmops.h): the shared per-sample math of
 * risk_math.h over the batch. */
#include "model/hmops.h"
#include "model/risk_math.h"

vp_status vp_hcpu_rb_loss(vp_backend* be, int64_t B, int T, int A, int nb, int head0, int n_size, float alpha,
                          float kappa, const float* iqn, const float* taus, const int32_t* actions, const float* w,
                          const float* s, float* loss, float* d_logit) {
    (void)be;
    for (int64_t b = 0; b < B; ++b)
        vp_risk_loss_one(b, B, T, A, nb, head0, n_size, alpha, kappa, iqn, taus, actions, w, s, loss, d_logit);
    return VP_OK;
}
