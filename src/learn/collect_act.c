/* Epsilon-greedy actions, the collection-step counter, the encoding gather and the hand-over:
 * argument checks, then the
 * kernels of the backend's kind (collect_cpu.c, collect_cuda.cu). */
#include <string.h>

#include "learn/collect_impl.h"

float vp_collect_epsilon(const vp_collect_cfg* c, int64_t step) {
    if (!c) return 0.0f;
    return vp_collect_eps_at(c->epsilon_start, c->epsilon_end, c->epsilon_steps, step);
}

/* The table of a backend's kind; fails with VP_ERR_UNSUPPORTED where there is none. */
static vp_status kernels_for(const char* fn, vp_backend* b, const vp_collect_kernels** out) {
    const void* t = NULL;
    vp_status s =
        vp_kernels_select(fn, "collection kernels", b, &vp_collect_cpu, VP_KERNELS_CUDA(vp_collect_cuda), &t);
    *out = (const vp_collect_kernels*)t;
    return s;
}

/* Checks a counter tensor: [2] i32 (one int64) in memory the backend reads. */
static vp_status check_counter(const char* fn, vp_backend* b, const vp_tensor* step) {
    return vp_tensor_check_numel(fn, "step counter", b, step, VP_I32, 2);
}

/* Fills the launch constants from the exploration settings and the action layout. */
static vp_status make_dims(const vp_collect_cfg* c, const vp_action_layout* l, int64_t E, vp_collect_dims* d) {
    memset(d, 0, sizeof *d);
    VP_TRY(vp_action_layout_check("vp_collect_act", l->n_branches, l->size));
    VP_REQUIRE(c->epsilon_start >= 0.0f && c->epsilon_start <= 1.0f && c->epsilon_end >= 0.0f &&
                   c->epsilon_end <= 1.0f && c->epsilon_steps >= 0,
               VP_ERR_INVALID_ARG, "vp_collect_act: epsilon %g -> %g over %lld steps (rates in [0, 1], steps >= 0)",
               (double)c->epsilon_start, (double)c->epsilon_end, (long long)c->epsilon_steps);
    d->n_envs = E;
    d->layout = vp_action_layout_env();
    d->eps_start = c->epsilon_start;
    d->eps_end = c->epsilon_end;
    d->eps_steps = c->epsilon_steps;
    d->seed = c->seed;
    return VP_OK;
}

vp_status vp_collect_act_scaled(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout,
                                const vp_tensor* q, const vp_tensor* step, const vp_tensor* eps_scale,
                                vp_tensor* actions) {
    static const char* fn = "vp_collect_act";
    VP_REQUIRE(b != NULL && c != NULL && layout != NULL, VP_ERR_INVALID_ARG, "%s: backend, cfg or layout is NULL", fn);
    const vp_collect_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_counter(fn, b, step));
    VP_TRY(vp_tensor_check_min_rows(fn, "actions", b, actions, VP_I32, 1, VP_ENV_BRANCHES));
    const int64_t E = vp_tensor_rows(actions);
    vp_collect_dims d;
    VP_TRY(make_dims(c, layout, E, &d));
    VP_TRY(vp_tensor_check_rows(fn, "q", b, q, VP_F32, E, d.layout.n_heads));
    if (eps_scale) {
        VP_TRY(vp_tensor_check_numel(fn, "epsilon scale", b, eps_scale, VP_F32, 1));
        d.eps_scale = (const float*)eps_scale->data;
    }
    return k->act(b, &d, (const float*)q->data, (const int64_t*)step->data, (int32_t*)actions->data);
}

vp_status vp_collect_act(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout, const vp_tensor* q,
                         const vp_tensor* step, vp_tensor* actions) {
    return vp_collect_act_scaled(b, c, layout, q, step, NULL, actions);
}

vp_status vp_collect_tick(vp_backend* b, vp_tensor* step) {
    static const char* fn = "vp_collect_tick";
    const vp_collect_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(check_counter(fn, b, step));
    return k->tick(b, (int64_t*)step->data);
}

/* The checks of a gather of n rows from table into out (wend_src, wend_dst: both or neither);
 * *d its dimensions. */
static vp_status check_gather(const char* fn, vp_backend* b, const vp_tensor* table, int64_t begin, int64_t n,
                              const vp_tensor* out, const vp_tensor* wend_src, const vp_tensor* wend_dst,
                              vp_collect_gather_dims* d) {
    VP_TRY(vp_tensor_check(fn, "table", b, table, VP_F32));
    VP_REQUIRE(table->ndim == 2, VP_ERR_SHAPE, "%s: table has %d dims (2: [rows, width])", fn, table->ndim);
    *d = (vp_collect_gather_dims){n, table->shape[0], table->shape[1], begin};
    VP_TRY(vp_tensor_check_rows(fn, "out", b, out, VP_F32, d->n, d->width));
    VP_REQUIRE((wend_src == NULL) == (wend_dst == NULL), VP_ERR_INVALID_ARG,
               "%s: window-end source and destination must both be given or both be NULL", fn);
    if (wend_src) {
        VP_TRY(vp_tensor_check_numel(fn, "window-end source", b, wend_src, VP_I32, d->n));
        VP_TRY(vp_tensor_check_numel(fn, "window-end destination", b, wend_dst, VP_I32, d->n));
    }
    return VP_OK;
}

/* The checks of a hand-over of n = numel(next_bar) envs; *n gets it. */
static vp_status check_handover(const char* fn, vp_backend* b, const vp_tensor* next_bar, const vp_tensor* next_port,
                                const vp_tensor* bar, const vp_tensor* port, const vp_tensor* step, int64_t* n) {
    VP_TRY(vp_tensor_check(fn, "next bar", b, next_bar, VP_I32));
    *n = vp_tensor_numel(next_bar);
    VP_TRY(vp_tensor_check_numel(fn, "bar", b, bar, VP_I32, *n));
    VP_TRY(vp_tensor_check_rows(fn, "next portfolio", b, next_port, VP_F32, *n, VP_ENV_PORTFOLIO));
    VP_TRY(vp_tensor_check_rows(fn, "portfolio", b, port, VP_F32, *n, VP_ENV_PORTFOLIO));
    return check_counter(fn, b, step);
}

vp_status vp_collect_gather(vp_backend* b, const vp_tensor* table, int64_t begin, const vp_tensor* bar,
                            vp_tensor* out, const vp_tensor* wend_src, vp_tensor* wend_dst) {
    static const char* fn = "vp_collect_gather";
    const vp_collect_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(vp_tensor_check(fn, "bar", b, bar, VP_I32));
    vp_collect_gather_dims d;
    VP_TRY(check_gather(fn, b, table, begin, vp_tensor_numel(bar), out, wend_src, wend_dst, &d));
    return k->gather(b, &d, (const float*)table->data, (const int32_t*)bar->data, (float*)out->data,
                     wend_src ? (const int32_t*)wend_src->data : NULL, wend_dst ? (int32_t*)wend_dst->data : NULL,
                     NULL);
}

vp_status vp_collect_handover(vp_backend* b, const vp_tensor* next_bar, const vp_tensor* next_port, vp_tensor* bar,
                              vp_tensor* port, vp_tensor* step) {
    static const char* fn = "vp_collect_handover";
    const vp_collect_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    int64_t n = 0;
    VP_TRY(check_handover(fn, b, next_bar, next_port, bar, port, step, &n));
    return k->handover(b, n, (const int32_t*)next_bar->data, (const float*)next_port->data, (int32_t*)bar->data,
                       (float*)port->data, (int64_t*)step->data);
}

vp_status vp_collect_handover_gather(vp_backend* b, const vp_tensor* next_bar, const vp_tensor* next_port,
                                     vp_tensor* bar, vp_tensor* port, vp_tensor* step, const vp_tensor* table,
                                     int64_t begin, vp_tensor* out, const vp_tensor* wend_src, vp_tensor* wend_dst) {
    static const char* fn = "vp_collect_handover_gather";
    const vp_collect_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    int64_t n = 0;
    VP_TRY(check_handover(fn, b, next_bar, next_port, bar, port, step, &n));
    vp_collect_gather_dims d;
    VP_TRY(check_gather(fn, b, table, begin, n, out, wend_src, wend_dst, &d));
    const vp_collect_hand h = {(const int32_t*)next_bar->data, (const float*)next_port->data, (int32_t*)bar->data,
                               (float*)port->data, (int64_t*)step->data};
    return k->gather(b, &d, (const float*)table->data, NULL, (float*)out->data,
                     wend_src ? (const int32_t*)wend_src->data : NULL, wend_dst ? (int32_t*)wend_dst->data : NULL,
                     &h);
}
