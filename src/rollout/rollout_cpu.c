/* The rollout kernels on the CPU: the op path's prepare and act steps as plain loops over
 * the windows (the shared per-window math of rollout_step.h), one step per launch, and no
 * fused path (it needs CUDA thread-block clusters). */
#include <math.h>
#include <string.h>

#include "rollout/rollout_impl.h"

vp_status vp_ro_cpu_prepare(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                            const vp_ro_windows* w, const float* enc, const int32_t* counter, float* eb, float* pf) {
    (void)b;
    const int32_t k = counter[0];
    for (int64_t i = 0; i < d->n_windows; ++i) {
        if (!vp_ro_active(w, i, k)) continue;
        memcpy(eb + i * d->hidden, enc + (int64_t)s->t[i] * d->hidden, sizeof(float) * (size_t)d->hidden);
        vp_ro_portfolio(d, bars, s, w, i, pf + i * VP_ENV_PORTFOLIO);
    }
    return VP_OK;
}

vp_status vp_ro_cpu_act(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                        const vp_ro_windows* w, const vp_ro_records* rec, int32_t* scratch, const float* q,
                        const int32_t* forced, const int32_t* counter) {
    (void)b;
    const int32_t k = counter[0];
    for (int64_t i = 0; i < d->n_windows; ++i) {
        if (!vp_ro_active(w, i, k)) {
            w->reward[i] = NAN; /* no step: nothing for a policy with memory to observe */
            continue;
        }
        int32_t a[VP_ENV_BRANCHES];
        double margin = VP_RO_NO_MARGIN;
        if (d->forced)
            memcpy(a, forced + (int64_t)s->t[i] * VP_ENV_BRANCHES, sizeof a);
        else
            margin = vp_action_greedy_margin(&d->layout, q + i * d->layout.n_heads, a);
        vp_ro_step(d, bars, s, w, scratch, k, i, a);
        vp_ro_log(s, w, rec, k, i, a, margin);
    }
    return VP_OK;
}

int vp_ro_cpu_graph_steps(vp_backend* b, int32_t max_steps) {
    (void)b, (void)max_steps;
    return 1;
}

int vp_ro_cpu_fused_supported(vp_backend* b, const vp_ro_dims* d, int hh, int z) {
    (void)b, (void)d, (void)hh, (void)z;
    return 0;
}

vp_status vp_ro_cpu_fused(vp_backend* b, const vp_ro_dims* d, const vp_ro_fused_weights* fw, const vp_env_bar* bars,
                          const vp_env_state* s, const vp_ro_windows* w, const vp_ro_records* rec) {
    (void)d, (void)fw, (void)bars, (void)s, (void)w, (void)rec;
    VP_FAIL(VP_ERR_UNSUPPORTED, "vp_backtest_run: the fused path runs on CUDA only, not on backend %s",
            vp_backend_name(b));
}

const vp_ro_kernels vp_ro_cpu = VP_KERNEL_TABLE(VP_RO_KERNELS, vp_ro, vp_ro_cpu);
