/* The loss kernels' entry points: check every argument, then call the implementation of
 * the backend's kind. */
#include <math.h>
#include <stdio.h>

#include "learn/loss_impl.h"

/* The table of a backend's kind; fails with VP_ERR_UNSUPPORTED where there is none. */
static vp_status kernels_for(const char* fn, vp_backend* b, const vp_loss_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "loss kernels", b, &vp_loss_cpu, VP_KERNELS_CUDA(vp_loss_cuda), &t);
    *out = (const vp_loss_kernels*)t;
    return s;
}

/* Checks tensor argument t: of `dtype`, `numel` elements, readable by the enclosing
 * function's backend `b`. */
#define CHECK_ARG(fn, t, dtype, numel) VP_TRY(vp_tensor_check_numel(fn, #t, b, t, dtype, numel))

static vp_status check_dims(const char* fn, const vp_loss_dims* d) {
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "%s: dims is NULL", fn);
    VP_REQUIRE(d->batch >= 1, VP_ERR_SHAPE, "%s: batch %lld < 1", fn, (long long)d->batch);
    VP_REQUIRE(d->n_branches >= 1 && d->n_branches <= VP_MAX_BRANCHES, VP_ERR_SHAPE, "%s: n_branches %d not in 1..%d",
               fn, d->n_branches, VP_MAX_BRANCHES);
    int off = 0;
    for (int br = 0; br < d->n_branches; ++br) {
        VP_REQUIRE(d->branch_size[br] >= 1, VP_ERR_SHAPE, "%s: branch %d has %d choices", fn, br, d->branch_size[br]);
        VP_REQUIRE(d->branch_offset[br] == off, VP_ERR_SHAPE, "%s: branch %d starts at head %d, expected %d", fn, br,
                   d->branch_offset[br], off);
        off += d->branch_size[br];
    }
    VP_REQUIRE(off == d->n_actions, VP_ERR_SHAPE, "%s: branches hold %d heads but n_actions is %d", fn, off,
               d->n_actions);
    VP_REQUIRE(d->n_atoms >= 2 && d->n_atoms <= VP_LOSS_MAX_ATOMS, VP_ERR_SHAPE, "%s: n_atoms %d not in 2..%d", fn,
               d->n_atoms, VP_LOSS_MAX_ATOMS);
    VP_REQUIRE(isfinite(d->v_min) && isfinite(d->v_max) && d->v_min < d->v_max, VP_ERR_INVALID_ARG,
               "%s: support [%g, %g] is empty or not finite", fn, (double)d->v_min, (double)d->v_max);
    VP_REQUIRE(d->n_taus >= 0 && d->n_target_taus >= 0 && (d->n_taus == 0) == (d->n_target_taus == 0),
               VP_ERR_SHAPE, "%s: n_taus %d and n_target_taus %d must both be positive or both 0", fn, d->n_taus,
               d->n_target_taus);
    VP_REQUIRE(d->n_taus <= VP_LOSS_MAX_TAUS && d->n_target_taus <= VP_LOSS_MAX_TAUS, VP_ERR_SHAPE,
               "%s: n_taus %d or n_target_taus %d exceeds %d", fn, d->n_taus, d->n_target_taus, VP_LOSS_MAX_TAUS);
    VP_REQUIRE(d->kappa > 0.0f && isfinite(d->kappa), VP_ERR_INVALID_ARG, "%s: kappa %g must be positive", fn,
               (double)d->kappa);
    return VP_OK;
}

vp_status vp_loss_dims_make(vp_loss_dims* d, const vp_model_cfg* mc, int64_t batch, int n_taus, int n_target_taus,
                            float kappa) {
    VP_REQUIRE(d != NULL && mc != NULL, VP_ERR_INVALID_ARG, "vp_loss_dims_make: dims or model cfg is NULL");
    VP_REQUIRE(mc->n_branches >= 1 && mc->n_branches <= VP_MAX_BRANCHES, VP_ERR_SHAPE,
               "vp_loss_dims_make: n_branches %d not in 1..%d", mc->n_branches, VP_MAX_BRANCHES);
    *d = (vp_loss_dims){0};
    d->batch = batch;
    d->n_branches = mc->n_branches;
    for (int br = 0; br < mc->n_branches; ++br) {
        d->branch_size[br] = mc->branch_sizes[br];
        d->branch_offset[br] = d->n_actions;
        d->n_actions += mc->branch_sizes[br];
    }
    d->n_atoms = mc->n_atoms;
    d->v_min = mc->v_min;
    d->v_max = mc->v_max;
    d->n_taus = n_taus;
    d->n_target_taus = n_target_taus;
    d->kappa = kappa;
    return check_dims("vp_loss_dims_make", d);
}

/* Checks the transition data of a batch and takes its raw pointers. */
static vp_status check_batch(const char* fn, vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* t,
                             vp_loss_batch_ptrs* p) {
    VP_REQUIRE(t != NULL, VP_ERR_INVALID_ARG, "%s: batch is NULL", fn);
    const int64_t B = d->batch;
    VP_TRY(vp_tensor_check_numel(fn, "batch.actions", b, t->actions, VP_I32, B * d->n_branches));
    VP_TRY(vp_tensor_check_numel(fn, "batch.next_actions", b, t->next_actions, VP_I32, B * d->n_branches));
    VP_TRY(vp_tensor_check_numel(fn, "batch.reward", b, t->reward, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "batch.discount", b, t->discount, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "batch.is_weight", b, t->is_weight, VP_F32, B));
    p->actions = (const int32_t*)t->actions->data;
    p->next_actions = (const int32_t*)t->next_actions->data;
    p->reward = (const float*)t->reward->data;
    p->discount = (const float*)t->discount->data;
    p->is_weight = (const float*)t->is_weight->data;
    // the learner modules' optional state: both supports or neither, PopArt's state
    VP_REQUIRE((t->support == NULL) == (t->target_support == NULL), VP_ERR_INVALID_ARG,
               "%s: batch.support and batch.target_support must be given together", fn);
    p->support = p->target_support = p->popart = NULL;
    if (t->support) {
        VP_TRY(vp_tensor_check_numel(fn, "batch.support", b, t->support, VP_F32, (int64_t)d->n_branches * d->n_atoms));
        VP_TRY(vp_tensor_check_numel(fn, "batch.target_support", b, t->target_support, VP_F32,
                                     (int64_t)d->n_branches * d->n_atoms));
        p->support = (const float*)t->support->data;
        p->target_support = (const float*)t->target_support->data;
    }
    if (t->popart) {
        VP_TRY(vp_tensor_check_numel(fn, "batch.popart", b, t->popart, VP_F32, VP_POPART_N));
        p->popart = (const float*)t->popart->data;
    }
    return VP_OK;
}

vp_status vp_loss_select(vp_backend* b, const vp_loss_dims* d, const vp_tensor* q, vp_tensor* a_star) {
    const char* fn = "vp_loss_select";
    const vp_loss_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    CHECK_ARG(fn, q, VP_F32, d->batch * d->n_actions);
    CHECK_ARG(fn, a_star, VP_I32, d->batch * d->n_branches);
    return k->select(b, d, (const float*)q->data, (int32_t*)a_star->data);
}

vp_status vp_loss_c51_project(vp_backend* b, const vp_loss_dims* d, const vp_tensor* support, const vp_tensor* probs,
                              vp_tensor* out) {
    const char* fn = "vp_loss_c51_project";
    const vp_loss_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    VP_TRY(vp_tensor_check(fn, "support", b, support, VP_F32));
    const int64_t n = vp_tensor_cols(support), rows = vp_tensor_rows(support);
    CHECK_ARG(fn, probs, VP_F32, rows * n);
    CHECK_ARG(fn, out, VP_F32, rows * d->n_atoms);
    return k->project(b, d, rows, (int)n, (const float*)support->data, (const float*)probs->data, (float*)out->data);
}

vp_status vp_loss_c51_project_grid(vp_backend* b, const vp_loss_dims* d, const vp_tensor* grid, const vp_tensor* support,
                                   const vp_tensor* probs, vp_tensor* out) {
    const char* fn = "vp_loss_c51_project_grid";
    const vp_loss_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    CHECK_ARG(fn, grid, VP_F32, d->n_atoms);
    VP_TRY(vp_tensor_check(fn, "support", b, support, VP_F32));
    const int64_t n = vp_tensor_cols(support), rows = vp_tensor_rows(support);
    CHECK_ARG(fn, probs, VP_F32, rows * n);
    CHECK_ARG(fn, out, VP_F32, rows * d->n_atoms);
    return k->project_grid(b, d, rows, (int)n, (const float*)grid->data, (const float*)support->data,
                           (const float*)probs->data, (float*)out->data);
}

vp_status vp_loss_c51(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch, const vp_tensor* log_probs,
                      const vp_tensor* target_log_probs, vp_tensor* proj, vp_tensor* loss, vp_tensor* d_log_probs) {
    const char* fn = "vp_loss_c51";
    const vp_loss_kernels* k = NULL;
    vp_loss_batch_ptrs p;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    VP_TRY(check_batch(fn, b, d, batch, &p));
    const int64_t n_lp = d->batch * d->n_actions * d->n_atoms;
    CHECK_ARG(fn, log_probs, VP_F32, n_lp);
    CHECK_ARG(fn, target_log_probs, VP_F32, n_lp);
    CHECK_ARG(fn, proj, VP_F32, d->batch * d->n_branches * d->n_atoms);
    CHECK_ARG(fn, loss, VP_F32, d->batch);
    CHECK_ARG(fn, d_log_probs, VP_F32, n_lp);
    return k->c51(b, d, &p, (const float*)log_probs->data, (const float*)target_log_probs->data, (float*)proj->data,
                  (float*)loss->data, (float*)d_log_probs->data);
}

vp_status vp_loss_iqn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch, const vp_tensor* iqn,
                      const vp_tensor* target_iqn, const vp_tensor* taus, vp_tensor* loss, vp_tensor* d_iqn) {
    const char* fn = "vp_loss_iqn";
    const vp_loss_kernels* k = NULL;
    vp_loss_batch_ptrs p;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    VP_REQUIRE(d->n_taus > 0, VP_ERR_INVALID_ARG, "%s: dims have no taus (n_taus 0)", fn);
    VP_TRY(check_batch(fn, b, d, batch, &p));
    const int64_t B = d->batch, A = d->n_actions;
    CHECK_ARG(fn, iqn, VP_F32, B * d->n_taus * A);
    CHECK_ARG(fn, target_iqn, VP_F32, B * d->n_target_taus * A);
    CHECK_ARG(fn, taus, VP_F32, B * d->n_taus);
    CHECK_ARG(fn, loss, VP_F32, B);
    CHECK_ARG(fn, d_iqn, VP_F32, B * d->n_taus * A);
    return k->iqn(b, d, &p, (const float*)iqn->data, (const float*)target_iqn->data, (const float*)taus->data,
                  (float*)loss->data, (float*)d_iqn->data);
}

vp_status vp_loss_draw_taus(vp_backend* b, uint64_t seed, uint64_t stream, const vp_tensor* step, vp_tensor* taus) {
    const char* fn = "vp_loss_draw_taus";
    const vp_loss_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(vp_tensor_check(fn, "taus", b, taus, VP_F32));
    if (step) CHECK_ARG(fn, step, VP_I32, 1);
    return k->taus(b, seed, stream, step ? (const int32_t*)step->data : NULL, vp_tensor_numel(taus),
                   (float*)taus->data);
}

vp_status vp_loss_stats(vp_backend* b, const vp_loss_dims* d, const vp_tensor* c51, const vp_tensor* iqn,
                        const vp_tensor* is_weight, const vp_tensor* q, const vp_tensor* grad_norm, vp_tensor* stats) {
    const char* fn = "vp_loss_stats";
    const vp_loss_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    CHECK_ARG(fn, c51, VP_F32, d->batch);
    if (iqn) CHECK_ARG(fn, iqn, VP_F32, d->batch);
    CHECK_ARG(fn, is_weight, VP_F32, d->batch);
    CHECK_ARG(fn, q, VP_F32, d->batch * d->n_actions);
    CHECK_ARG(fn, grad_norm, VP_F32, 1);
    CHECK_ARG(fn, stats, VP_F32, VP_STAT_COUNT);
    return k->stats(b, d, (const float*)c51->data, iqn ? (const float*)iqn->data : NULL,
                    (const float*)is_weight->data, (const float*)q->data, (const float*)grad_norm->data,
                    (float*)stats->data);
}

vp_status vp_loss_atoms_grad(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch,
                             const vp_tensor* log_probs, const vp_tensor* target_q, const vp_tensor* spacing,
                             vp_tensor* resid, vp_tensor* d_spacing) {
    const char* fn = "vp_loss_atoms_grad";
    const vp_loss_kernels* k = NULL;
    vp_loss_batch_ptrs p;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    VP_TRY(check_batch(fn, b, d, batch, &p));
    VP_REQUIRE(p.support != NULL, VP_ERR_INVALID_ARG, "%s: batch.support is NULL (adaptive atoms need it)", fn);
    const int64_t B = d->batch, A = d->n_actions, nb = d->n_branches, Z = d->n_atoms;
    CHECK_ARG(fn, log_probs, VP_F32, B * A * Z);
    CHECK_ARG(fn, target_q, VP_F32, B * A);
    CHECK_ARG(fn, spacing, VP_F32, nb * (Z - 1));
    CHECK_ARG(fn, resid, VP_F32, B * nb);
    CHECK_ARG(fn, d_spacing, VP_F32, nb * (Z - 1));
    return k->atoms_grad(b, d, &p, (const float*)log_probs->data, (const float*)target_q->data,
                         (const float*)spacing->data, (float*)resid->data, (float*)d_spacing->data);
}

vp_status vp_loss_popart(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch, const vp_tensor* target_q,
                         float beta, vp_tensor* w, vp_tensor* bias, vp_tensor* target_w, vp_tensor* target_bias) {
    const char* fn = "vp_loss_popart";
    const vp_loss_kernels* k = NULL;
    vp_loss_batch_ptrs p;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_dims(fn, d));
    VP_TRY(check_batch(fn, b, d, batch, &p));
    VP_REQUIRE(p.popart != NULL, VP_ERR_INVALID_ARG, "%s: batch.popart (the state) is NULL", fn);
    VP_REQUIRE(beta > 0.0f && beta <= 1.0f, VP_ERR_INVALID_ARG, "%s: beta %g must lie in (0, 1]", fn, (double)beta);
    const int64_t A = d->n_actions;
    CHECK_ARG(fn, target_q, VP_F32, d->batch * A);
    // each output layer: w [A, HH] with its bias [A], both or neither
    VP_REQUIRE((w == NULL) == (bias == NULL) && (target_w == NULL) == (target_bias == NULL), VP_ERR_INVALID_ARG,
               "%s: an output layer's weight and bias must be given together", fn);
    const vp_tensor* any = w ? w : target_w;
    const int64_t HH = any ? vp_tensor_numel(any) / A : 0;
    VP_REQUIRE(!any || (HH >= 1 && HH * A == vp_tensor_numel(any)), VP_ERR_SHAPE,
               "%s: output weight of %lld elements is not [%lld, HH]", fn, (long long)vp_tensor_numel(any),
               (long long)A);
    if (w) CHECK_ARG(fn, w, VP_F32, A * HH);
    if (bias) CHECK_ARG(fn, bias, VP_F32, A);
    if (target_w) CHECK_ARG(fn, target_w, VP_F32, A * HH);
    if (target_bias) CHECK_ARG(fn, target_bias, VP_F32, A);
    return k->popart(b, d, &p, (const float*)target_q->data, beta, (float*)batch->popart->data, HH,
                     w ? (float*)w->data : NULL,
                     bias ? (float*)bias->data : NULL, target_w ? (float*)target_w->data : NULL,
                     target_bias ? (float*)target_bias->data : NULL);
}
