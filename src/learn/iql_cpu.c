/* IQL's kernels on the CPU: loops over the batch through the shared math of iql_math.h (the same
 * functions the CUDA kernels call). */
#include <string.h>

#include "learn/iql_impl.h"

vp_status vp_iql_cpu_sample(vp_backend* b, int64_t B, uint64_t seed, uint64_t stream, const int64_t* ctr,
                            vp_iql_data_ptrs d, vp_iql_rows out) {
    (void)b;
    const int64_t n = d.steps * d.n_envs, u = ctr[0];
    for (int64_t k = 0; k < B; ++k) {
        const int64_t r = vp_iql_row_at(n, B, seed, stream, u, k), nx = r + d.n_envs;
        out.bar[k] = d.bar[r];
        out.bar1[k] = d.bar[nx];
        memcpy(out.portfolio + k * VP_ENV_PORTFOLIO, d.portfolio + r * VP_ENV_PORTFOLIO, sizeof(float) * VP_ENV_PORTFOLIO);
        memcpy(out.portfolio1 + k * VP_ENV_PORTFOLIO, d.portfolio + nx * VP_ENV_PORTFOLIO,
               sizeof(float) * VP_ENV_PORTFOLIO);
        memcpy(out.action + k * VP_ENV_BRANCHES, d.action + r * VP_ENV_BRANCHES, sizeof(int32_t) * VP_ENV_BRANCHES);
        out.reward[k] = d.reward[r];
        out.done[k] = d.done[r];
    }
    return VP_OK;
}

vp_status vp_iql_cpu_tick(vp_backend* b, int64_t* ctr) {
    (void)b;
    if (ctr[0] < INT64_MAX) ctr[0] += 1; /* a counter at its end stays there */
    return VP_OK;
}

vp_status vp_iql_cpu_loss(vp_backend* b, const vp_iql_loss_dims* d, const float* q1, const float* q2, const float* qt1,
                          const float* qt2, const float* v, const float* v1, const float* logits, vp_iql_rows rows,
                          float* terms, float* d_q1, float* d_q2, float* d_logits, float* d_v) {
    (void)b;
    const int64_t A = d->layout.n_heads;
    for (int64_t k = 0; k < d->m; ++k)
        vp_iql_sample_loss(d, q1 + k * A, q2 + k * A, qt1 + k * A, qt2 + k * A, v[k], v1[k], logits + k * A,
                           rows.action + k * VP_ENV_BRANCHES, rows.reward[k], rows.done[k], terms + k * VP_IQL_T_COUNT,
                           d_q1 + k * A, d_q2 + k * A, d_logits + k * A, d_v + k);
    return VP_OK;
}

const vp_iql_kernels vp_iql_cpu = VP_KERNEL_TABLE(VP_IQL_KERNELS, vp_iql, vp_iql_cpu);
