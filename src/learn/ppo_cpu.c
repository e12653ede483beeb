/* PPO's kernels on the CPU: loops over envs and samples through the shared math of
 * ppo_math.h (the same functions the CUDA kernels call). */
#include <string.h>

#include "learn/ppo_impl.h"
#include "vulpes/collect.h"

vp_status vp_ppo_cpu_sample(vp_backend* b, int64_t E, uint64_t seed, const float* logits, const float* value,
                            const int32_t* bar, const float* portfolio, const int64_t* ctr, int32_t* env_actions,
                            vp_ppo_store_ptrs out) {
    (void)b;
    const vp_action_layout l = vp_action_layout_env();
    const uint64_t k = (uint64_t)ctr[VP_PPO_CTR_STEP];
    for (int64_t i = 0; i < E; ++i) {
        const vp_u32x4 draw = vp_rng_draw(seed, VP_COLLECT_STREAM + (uint64_t)i, k);
        float ent = 0.0f;
        int32_t* a = out.actions + i * VP_ENV_BRANCHES;
        out.logp[i] = vp_ppo_sample(&l, logits + i * l.n_heads, draw, a, &ent);
        memcpy(env_actions + i * VP_ENV_BRANCHES, a, sizeof(int32_t) * VP_ENV_BRANCHES);
        out.value[i] = value[i];
        out.bar[i] = bar[i];
        memcpy(out.portfolio + i * VP_ENV_PORTFOLIO, portfolio + i * VP_ENV_PORTFOLIO, sizeof(float) * VP_ENV_PORTFOLIO);
    }
    return VP_OK;
}

vp_status vp_ppo_cpu_tick(vp_backend* b, int64_t* ctr, int which) {
    (void)b;
    if (ctr[which] < INT64_MAX) ctr[which] += 1; /* a counter at its end stays there */
    return VP_OK;
}

vp_status vp_ppo_cpu_gae(vp_backend* b, int64_t T, int64_t E, float gamma, float lambda, const float* reward,
                         const float* done, const float* value, const float* last_value, float* adv, float* ret) {
    (void)b;
    for (int64_t i = 0; i < E; ++i) vp_ppo_gae_env(T, E, i, reward, done, value, last_value[i], gamma, lambda, adv, ret);
    return VP_OK;
}

vp_status vp_ppo_cpu_permute(vp_backend* b, int64_t n, uint64_t seed, uint64_t stream, int64_t* ctr, int32_t* perm) {
    const uint64_t epoch = (uint64_t)ctr[VP_PPO_CTR_EPOCH];
    for (int64_t k = 0; k < n; ++k) perm[k] = (int32_t)vp_ppo_perm_at(n, seed, stream, epoch, k);
    return vp_ppo_cpu_tick(b, ctr, VP_PPO_CTR_EPOCH);
}

vp_status vp_ppo_cpu_gather(vp_backend* b, int64_t n, const int32_t* idx, vp_ppo_rows src, vp_ppo_rows dst, int norm) {
    (void)b;
    for (int64_t k = 0; k < n; ++k) {
        const int64_t r = idx[k];
        dst.bar[k] = src.bar[r];
        memcpy(dst.portfolio + k * VP_ENV_PORTFOLIO, src.portfolio + r * VP_ENV_PORTFOLIO, sizeof(float) * VP_ENV_PORTFOLIO);
        memcpy(dst.actions + k * VP_ENV_BRANCHES, src.actions + r * VP_ENV_BRANCHES, sizeof(int32_t) * VP_ENV_BRANCHES);
        dst.logp[k] = src.logp[r];
        dst.value[k] = src.value[r];
        dst.adv[k] = src.adv[r];
        dst.ret[k] = src.ret[r];
    }
    if (!norm) return VP_OK;
    float mean = 0.0f, den = 1.0f;
    vp_ppo_adv_moments(dst.adv, n, &mean, &den);
    for (int64_t k = 0; k < n; ++k) dst.adv[k] = (dst.adv[k] - mean) / den;
    return VP_OK;
}

vp_status vp_ppo_cpu_loss(vp_backend* b, const vp_ppo_loss_dims* d, const float* logits, const float* value,
                          vp_ppo_rows mb, float* terms, float* d_logits, float* d_value) {
    (void)b;
    const int A = d->layout.n_heads;
    for (int64_t k = 0; k < d->m; ++k)
        vp_ppo_sample_loss(d, logits + k * A, value[k], mb.actions + k * VP_ENV_BRANCHES, mb.logp[k], mb.value[k],
                           mb.adv[k], mb.ret[k], terms + k * VP_PPO_T_COUNT, d_logits + k * A, d_value + k);
    return VP_OK;
}

const vp_ppo_kernels vp_ppo_cpu = VP_KERNEL_TABLE(VP_PPO_KERNELS, vp_ppo, vp_ppo_cpu);
