/* Epsilon-greedy actions and the collection-step counter: argument checks, the CPU loops
 * and the dispatch to the CUDA kernels (collect_cuda.cu). */
#include <string.h>

#include "learn/collect_math.h"

float vp_collect_epsilon(const vp_collect_cfg* c, int64_t step) {
    if (!c) return 0.0f;
    return vp_collect_eps_at(c->epsilon_start, c->epsilon_end, c->epsilon_steps, step);
}

/* Checks a counter tensor: [2] i32 (one int64) in memory the backend reads. */
static vp_status check_counter(const char* fn, vp_backend* b, const vp_tensor* step) {
    VP_REQUIRE(step != NULL && step->data != NULL, VP_ERR_INVALID_ARG, "%s: step counter is NULL", fn);
    VP_REQUIRE(step->dtype == VP_I32 && vp_tensor_numel(step) == 2, VP_ERR_SHAPE,
               "%s: step counter must be i32 [2] (one int64)", fn);
    VP_REQUIRE(vp_backend_can_read(b, step->mem), VP_ERR_DEVICE, "%s: step counter lives in %s memory, which backend "
               "%s cannot reach", fn, vp_mem_name(step->mem), vp_backend_name(b));
    return VP_OK;
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

vp_status vp_collect_act(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout, const vp_tensor* q,
                         const vp_tensor* step, vp_tensor* actions) {
    static const char* fn = "vp_collect_act";
    VP_REQUIRE(b != NULL && c != NULL && layout != NULL && q != NULL && actions != NULL, VP_ERR_INVALID_ARG,
               "%s: NULL argument", fn);
    VP_TRY(check_counter(fn, b, step));
    VP_REQUIRE(q->data != NULL && actions->data != NULL, VP_ERR_INVALID_ARG, "%s: q or actions has no data", fn);
    const int64_t E = vp_tensor_rows(actions);
    vp_collect_dims d;
    VP_TRY(make_dims(c, layout, E, &d));
    char t1[96], t2[96];
    VP_REQUIRE(q->dtype == VP_F32 && vp_tensor_rows(q) == E && vp_tensor_cols(q) == d.layout.n_heads, VP_ERR_SHAPE,
               "%s: q is %s, expected f32 [%lld, %d]", fn, vp_tensor_describe(q, t1, sizeof t1), (long long)E,
               d.layout.n_heads);
    VP_REQUIRE(actions->dtype == VP_I32 && vp_tensor_cols(actions) == VP_ENV_BRANCHES, VP_ERR_SHAPE,
               "%s: actions is %s, expected i32 [E, %d]", fn, vp_tensor_describe(actions, t2, sizeof t2),
               VP_ENV_BRANCHES);
    VP_REQUIRE(vp_backend_can_read(b, q->mem) && vp_backend_can_read(b, actions->mem), VP_ERR_DEVICE,
               "%s: q or actions lives where backend %s cannot reach", fn, vp_backend_name(b));
    const float* qp = (const float*)q->data;
    const int64_t* sp = (const int64_t*)step->data;
    int32_t* ap = (int32_t*)actions->data;
    if (vp_backend_get_kind(b) == VP_BACKEND_CPU) {
        // One env after another, each from its own Philox stream.
        const int64_t k = sp[0];
        for (int64_t i = 0; i < E; ++i) vp_collect_act_index(&d, qp + i * d.layout.n_heads, k, i, ap + i * VP_ENV_BRANCHES);
        return VP_OK;
    }
#ifdef VP_HAVE_CUDA
    return vp_collect_cuda_act(b, &d, qp, sp, ap);
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "%s: backend %s is not available in this build", fn, vp_backend_name(b));
#endif
}

vp_status vp_collect_tick(vp_backend* b, vp_tensor* step) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "vp_collect_tick: backend is NULL");
    VP_TRY(check_counter("vp_collect_tick", b, step));
    int64_t* sp = (int64_t*)step->data;
    if (vp_backend_get_kind(b) == VP_BACKEND_CPU) {
        sp[0] += 1;
        return VP_OK;
    }
#ifdef VP_HAVE_CUDA
    return vp_collect_cuda_tick(b, sp);
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "vp_collect_tick: backend %s is not available in this build", vp_backend_name(b));
#endif
}
