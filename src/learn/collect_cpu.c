/* The collection kernels on the CPU: one env after another, each from its own Philox
 * stream (the per-env math of collect_math.h, shared with collect_cuda.cu). */
#include "learn/collect_impl.h"

vp_status vp_collect_cpu_act(vp_backend* b, const vp_collect_dims* d, const float* q, const int64_t* step,
                             int32_t* actions) {
    (void)b;
    const int64_t k = step[0];
    for (int64_t i = 0; i < d->n_envs; ++i)
        vp_collect_act_index(d, q + i * d->layout.n_heads, k, i, actions + i * VP_ENV_BRANCHES);
    return VP_OK;
}

vp_status vp_collect_cpu_tick(vp_backend* b, int64_t* step) {
    (void)b;
    if (step[0] < INT64_MAX) step[0] += 1; /* a counter at its end stays there */
    return VP_OK;
}

vp_status vp_collect_cpu_gather(vp_backend* b, const vp_collect_gather_dims* d, const float* table,
                                const int32_t* bar, float* out, const int32_t* wend_src, int32_t* wend_dst,
                                const vp_collect_hand* hand) {
    // the hand-over first; the gather then reads the bars it wrote (the same as next_bar)
    if (hand) {
        VP_TRY(vp_collect_cpu_handover(b, d->n, hand->next_bar, hand->next_port, hand->bar, hand->port, hand->step));
        bar = hand->bar;
    }
    for (int64_t i = 0; i < d->n; ++i) {
        for (int64_t j = 0; j < d->width; ++j) out[i * d->width + j] = vp_collect_gather_elem(d, table, bar[i], j);
        if (wend_src && wend_dst) wend_dst[i] = wend_src[i];
    }
    return VP_OK;
}

vp_status vp_collect_cpu_handover(vp_backend* b, int64_t n, const int32_t* next_bar, const float* next_port,
                                  int32_t* bar, float* port, int64_t* step) {
    for (int64_t i = 0; i < n; ++i) {
        bar[i] = next_bar[i];
        for (int k = 0; k < VP_ENV_PORTFOLIO; ++k) port[i * VP_ENV_PORTFOLIO + k] = next_port[i * VP_ENV_PORTFOLIO + k];
    }
    return vp_collect_cpu_tick(b, step);
}

const vp_collect_kernels vp_collect_cpu = VP_KERNEL_TABLE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cpu);
