/* The Decision Transformer's update: a batch of sequences drawn with Philox (dt kernels), the
 * encoder and the transformer forward, the loss, the backward, the gradient-norm clip and AdamW;
 * issued as ops only and replayed as one graph per iteration. Statistics. */
#include <math.h>
#include <string.h>

#include "learn/dt_impl.h"
#include "vulpes/ops.h"

/* The dataset rows the draw reads. */
static vp_dt_rows_ptrs rows_of(const vp_dt_data* d) {
    vp_dt_rows_ptrs r = {d->n_rows,           d->n_envs,           (const int32_t*)d->bar.data, (const float*)d->port.data,
                         (const int32_t*)d->act.data, (const float*)d->rtg.data, (const int32_t*)d->ts.data};
    return r;
}

/* The forward, loss and backward of the drawn batch: gradients in net.grads, the loss's terms and
 * statistics, the clip coefficient (everything but the optimiser step). */
static vp_status forward_backward(vp_dt_trainer* t) {
    vp_dt_net* n = &t->net;
    const int64_t B = t->dc.batch, BK = B * n->dims.K;
    VP_TRY(vp_dt_encode(n, &n->params, t->acts, &t->features, &t->batch.bar, BK));
    VP_TRY(vp_dt_forward(n, &n->params, t->acts, NULL, &t->batch, B));
    vp_tensor steps = vp_tensor_1d((float*)t->stats.data + VP_DT_STAT_STEPS, VP_F32, t->stats.mem, 1);
    VP_TRY(vp_dt_loss(n, t->acts, &t->batch, &t->terms, &steps));
    vp_tensor loss = vp_tensor_1d((float*)t->stats.data + VP_DT_STAT_LOSS, VP_F32, t->stats.mem, 1);
    VP_TRY(vp_reduce_all(t->backend, VP_REDUCE_SUM, &t->terms, &loss));
    VP_TRY(vp_dt_backward(n, &n->params, t->acts));
    return vp_clip_coef(t->backend, &n->grads, t->dc.clip_norm, &t->grad_norm, &t->clip_coef);
}

/* The draw of update adam_step (the updates done so far) into the batch. */
static vp_status draw(vp_dt_trainer* t) {
    const vp_dt_kernels* k = NULL;
    VP_TRY(vp_dt_kernels_of("dt", t->backend, &k));
    return k->sample(t->backend, &t->net.dims, t->dc.batch, t->parts.learner.seed, (const int32_t*)t->adam_step.data,
                     rows_of(&t->rows), vp_dt_batch_ptrs_of(&t->batch));
}

vp_status vp_dt_update(vp_dt_trainer* t) {
    VP_TRY(draw(t));
    VP_TRY(forward_backward(t));
    VP_TRY(vp_step_increment(t->backend, &t->adam_step));
    return vp_adamw(t->backend, &t->dc.adamw, &t->net.params, &t->net.grads, &t->adam_m, &t->adam_v, &t->adam_step,
                    &t->clip_coef);
}

static vp_status update_body(vp_backend* b, void* ctx) {
    (void)b;
    return vp_dt_update((vp_dt_trainer*)ctx);
}

/* Runs once, eagerly, every op shape of an update whose outputs are scratch (the draw, forward,
 * loss and backward), so that first-use set-up (GEMM plans) happens before the capture. */
static vp_status prime(vp_dt_trainer* t) {
    VP_TRY(draw(t));
    VP_TRY(forward_backward(t));
    return vp_backend_sync(t->backend);
}

vp_status vp_dt_trainer_iterate(vp_dt_trainer* t, int64_t n) {
    VP_REQUIRE(t != NULL && t->val != NULL, VP_ERR_INVALID_ARG, "vp_dt_trainer_iterate: trainer is not initialised");
    VP_REQUIRE(n >= 0 && t->count.iteration <= INT64_MAX / 4 - n, VP_ERR_INVALID_ARG,
               "vp_dt_trainer_iterate: n = %lld", (long long)n);
    if (n > 0 && !t->g_update) {
        VP_TRY(prime(t));
        VP_TRY(vp_graph_capture(t->backend, update_body, t, &t->g_update));
    }
    for (int64_t i = 0; i < n; ++i) {
        vp_status s = vp_graph_launch(t->backend, t->g_update);
        if (s != VP_OK) return vp_error_context(s, "DT update %lld", (long long)(t->count.iteration + 1));
        t->count.iteration += 1;
        t->count.learner_steps += 1;
    }
    return VP_OK;
}

vp_status vp_dt_trainer_stats(vp_dt_trainer* t, double* loss, double* steps, double* grad_norm) {
    VP_REQUIRE(t != NULL && loss != NULL && steps != NULL && grad_norm != NULL, VP_ERR_INVALID_ARG,
               "vp_dt_trainer_stats: NULL argument");
    float s[VP_DT_STAT_COUNT], g = 0.0f;
    VP_TRY(vp_download(t->backend, s, &t->stats, sizeof s));
    VP_TRY(vp_download(t->backend, &g, &t->grad_norm, sizeof g));
    *steps = (double)s[VP_DT_STAT_STEPS];
    *loss = s[VP_DT_STAT_STEPS] > 0.0f ? (double)s[VP_DT_STAT_LOSS] / (double)s[VP_DT_STAT_STEPS] : NAN;
    *grad_norm = (double)g;
    return VP_OK;
}
