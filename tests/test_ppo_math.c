/* PPO's per-sample math (src/learn/ppo_math.h) on the CPU kernels: GAE against hand-computed
 * values on a short episode with a terminal in the middle and a bootstrap at the end; the
 * branching categorical's log-probability and entropy against closed forms; the sampler's
 * frequencies; the clipped loss's gradient (surrogate, value loss plain and clipped, entropy
 * bonus) against central finite differences of the loss; the advantage normalisation; the
 * epoch permutation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/ppo_impl.h"
#include "vp_test.h"
#include "vulpes/collect.h"

/* Two envs, four steps: env 0 ends an episode at step 1 and bootstraps from 4 after step 3;
 * env 1 never ends, values 0, bootstrap 0. gamma = lambda = 0.5, so every value is exact. */
static void test_gae_hand(void) {
    const float reward[8] = {1, 1, 2, 1, 3, 1, 4, 1}; /* row t * 2 + i */
    const float done[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    const float value[8] = {0.5f, 0, 1, 0, 1.5f, 0, 2, 0};
    const float last[2] = {4, 0};
    float adv[8], ret[8];
    CHECK_OK(vp_ppo_cpu_gae(NULL, 4, 2, 0.5f, 0.5f, reward, done, value, last, adv, ret));
    // env 0: t3 delta 4 + 0.5 * 4 - 2 = 4; t2 3 + 1 - 1.5 = 2.5, + 0.25 * 4 = 3.5; t1 terminal: 2 - 1 = 1;
    // t0 1 + 0.5 - 0.5 = 1, + 0.25 * 1 = 1.25
    const float a0[4] = {1.25f, 1.0f, 3.5f, 4.0f}, r0[4] = {1.75f, 2.0f, 5.0f, 6.0f};
    // env 1: deltas 1; 1, 1.25, 1.3125, 1.328125 from the end
    const float a1[4] = {1.328125f, 1.3125f, 1.25f, 1.0f};
    for (int t = 0; t < 4; ++t) {
        CHECK(adv[2 * t] == a0[t] && ret[2 * t] == r0[t], "env 0 step %d: adv %g ret %g, expected %g %g", t,
              (double)adv[2 * t], (double)ret[2 * t], (double)a0[t], (double)r0[t]);
        CHECK(adv[2 * t + 1] == a1[t] && ret[2 * t + 1] == a1[t], "env 1 step %d: adv %g ret %g, expected %g", t,
              (double)adv[2 * t + 1], (double)ret[2 * t + 1], (double)a1[t]);
    }
}

/* The environment's layout: 3, 4, 3, 3 choices. Branch 0 uniform, branch 1 (1, 3, 0, 0) in
 * log space, branches 2, 3 a near-certain choice. */
static void test_logp_entropy(void) {
    const vp_action_layout l = vp_action_layout_env();
    float z[13] = {0, 0, 0, 0, logf(3.0f), -1e30f, -1e30f, -50, 50, -50, 50, -50, -50};
    const int32_t a[4] = {2, 1, 1, 0};
    float ent = 0.0f;
    const float lp = vp_ppo_logp(&l, z, a, &ent);
    const double want_lp = -log(3.0) + log(0.75) + 0.0 + 0.0;
    const double want_h = log(3.0) - (0.25 * log(0.25) + 0.75 * log(0.75));
    CHECK_NEAR(lp, want_lp, 1e-6, 0);
    CHECK_NEAR(ent, want_h, 1e-6, 0);
    // the sampler: branch 0 uniform, branch 1 at 1/4, 3/4, branches 2 and 3 always their sure choice
    int count0[3] = {0}, count1[4] = {0}, sure = 0;
    const int n = 20000;
    for (int k = 0; k < n; ++k) {
        int32_t s[4];
        float e2 = 0.0f;
        const float slp = vp_ppo_sample(&l, z, vp_rng_draw(5, 9, (uint64_t)k), s, &e2);
        float e3 = 0.0f;
        CHECK(slp == vp_ppo_logp(&l, z, s, &e3) && e2 == e3, "draw %d: the sample's log-probability", k);
        count0[s[0]]++, count1[s[1]]++;
        sure += s[2] == 1 && s[3] == 0;
    }
    CHECK(sure == n && count1[2] == 0 && count1[3] == 0, "sure choices %d of %d, impossible ones %d %d", sure, n,
          count1[2], count1[3]);
    CHECK_NEAR(count1[1] / (double)n, 0.75, 0.015, 0);
    for (int j = 0; j < 3; ++j) CHECK_NEAR(count0[j] / (double)n, 1.0 / 3.0, 0.015, 0);
}

/* M samples of a minibatch for the gradient check. */
#define M 6
#define A 13

/* The minibatch loss (1 / M) sum (pg + vf_coef v - ent_coef ent) from the kernel's terms. */
static double loss_of(const vp_ppo_loss_dims* d, const float* z, const float* v, vp_ppo_rows mb) {
    float terms[M * VP_PPO_T_COUNT], dz[M * A], dv[M];
    vp_ppo_cpu_loss(NULL, d, z, v, mb, terms, dz, dv);
    double L = 0.0;
    for (int k = 0; k < M; ++k)
        L += terms[k * VP_PPO_T_COUNT + VP_PPO_T_PG] + d->vf_coef * terms[k * VP_PPO_T_COUNT + VP_PPO_T_V] -
             d->ent_coef * terms[k * VP_PPO_T_COUNT + VP_PPO_T_ENT];
    return L / M;
}

/* Analytic gradient of the loss against central differences of it (h = 1e-3 in float; the
 * samples' ratios and value moves sit away from the clip edges, so the loss is smooth there). */
static void check_grad(float vf_clip) {
    vp_ppo_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = M, d.layout = vp_action_layout_env(), d.clip = 0.2f, d.vf_clip = vf_clip, d.ent_coef = 0.05f;
    d.vf_coef = 0.5f;
    float z[M * A], v[M], old_lp[M], old_v[M], adv[M], ret[M];
    int32_t act[M * 4];
    // log ratios: -0.6 (clipped below), -0.05, 0.1, 0.5 (clipped above), 0.0, 0.3; advantages of both signs
    const float lr[M] = {-0.6f, -0.05f, 0.1f, 0.5f, 0.0f, 0.3f}, ad[M] = {1.0f, -0.7f, 0.4f, 1.3f, -1.1f, -0.5f};
    const float dvs[M] = {0.5f, -0.05f, 0.02f, -0.6f, 0.3f, 0.0f};
    for (int k = 0; k < M; ++k) {
        for (int j = 0; j < A; ++j) z[k * A + j] = vp_rng_normal(11, (uint64_t)k, (uint64_t)j);
        for (int br = 0; br < 4; ++br) act[k * 4 + br] = (k + br) % d.layout.size[br];
        float ent = 0.0f;
        old_lp[k] = vp_ppo_logp(&d.layout, z + k * A, act + k * 4, &ent) - lr[k];
        v[k] = vp_rng_normal(12, (uint64_t)k, 0);
        old_v[k] = v[k] - dvs[k];
        adv[k] = ad[k];
        ret[k] = v[k] + 0.8f * vp_rng_normal(13, (uint64_t)k, 0);
    }
    int32_t bar[M] = {0};
    float port[M * VP_ENV_PORTFOLIO] = {0};
    vp_ppo_rows mb = {bar, port, act, old_lp, old_v, adv, ret};
    float terms[M * VP_PPO_T_COUNT], dz[M * A], dv[M];
    CHECK_OK(vp_ppo_cpu_loss(NULL, &d, z, v, mb, terms, dz, dv));
    // the clip fraction counts the two clipped ratios
    float cf = 0.0f;
    for (int k = 0; k < M; ++k) cf += terms[k * VP_PPO_T_COUNT + VP_PPO_T_CLIPFRAC];
    CHECK(cf == 3.0f, "clipped ratios %g (expected 3: exp(-0.6), exp(0.5), exp(0.3) lie outside 1 +- 0.2)",
          (double)cf);
    const float h = 1e-3f;
    double worst = 0.0;
    for (int e = 0; e < M * A + M; ++e) {
        float* x = e < M * A ? &z[e] : &v[e - M * A];
        const float x0 = *x;
        *x = x0 + h;
        const double lp = loss_of(&d, z, v, mb);
        *x = x0 - h;
        const double lm = loss_of(&d, z, v, mb);
        *x = x0;
        const double fd = (lp - lm) / (2.0 * h), an = e < M * A ? dz[e] : dv[e - M * A];
        const double err = fabs(fd - an);
        worst = err > worst ? err : worst;
        CHECK(err <= 2e-4 + 2e-2 * fabs(an), "vf_clip %g, element %d: analytic %.7g, finite difference %.7g",
              (double)vf_clip, e, an, fd);
    }
    fprintf(stderr, "  vf_clip %g: worst |analytic - finite difference| %.2e over %d elements\n", (double)vf_clip, worst,
            M * A + M);
}

static void test_loss_grad(void) {
    check_grad(0.0f);
    check_grad(0.2f);
}

/* Hand values of one sample: ratio 1 (old = new log-probability), advantage 2, the value 1
 * against a return 3: pg = -2, value term 0.5 * 4 = 2; d v = vf_coef (v - R) / M. */
static void test_loss_hand(void) {
    vp_ppo_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = 2, d.layout = vp_action_layout_env(), d.clip = 0.2f, d.vf_coef = 0.5f;
    float z[A] = {0};
    const int32_t act[4] = {0, 0, 0, 0};
    float ent = 0.0f;
    const float lp = vp_ppo_logp(&d.layout, z, act, &ent);
    float t[VP_PPO_T_COUNT], dz[A], dv = 0.0f;
    vp_ppo_sample_loss(&d, z, 1.0f, act, lp, 1.0f, 2.0f, 3.0f, t, dz, &dv);
    CHECK(t[VP_PPO_T_PG] == -2.0f && t[VP_PPO_T_V] == 2.0f && t[VP_PPO_T_KL] == 0.0f && t[VP_PPO_T_CLIPFRAC] == 0.0f,
          "pg %g, v %g, kl %g, clipfrac %g", (double)t[VP_PPO_T_PG], (double)t[VP_PPO_T_V], (double)t[VP_PPO_T_KL],
          (double)t[VP_PPO_T_CLIPFRAC]);
    CHECK(dv == -0.5f, "d v = %g, expected 0.5 (1 - 3) / 2 = -0.5", (double)dv);
    // d pg / d z of the chosen head of the uniform 3-way branch: -A ratio (1 - 1/3) / M = -2/3
    CHECK_NEAR(dz[0], -2.0 * (2.0 / 3.0) / 2.0, 1e-6, 0);
}

static void test_normalise_and_permute(void) {
    // advantages 1, 2, 3, 4: mean 2.5, std (Bessel) sqrt(5/3)
    int32_t idx[4] = {3, 0, 2, 1}, bar[4] = {10, 11, 12, 13}, act[16] = {0}, obar[4], oact[16];
    float port[32] = {0}, lp[4] = {0}, v[4] = {0}, adv[4] = {1, 2, 3, 4}, ret[4] = {5, 6, 7, 8};
    float oport[32], olp[4], ov[4], oadv[4], oret[4];
    vp_ppo_rows src = {bar, port, act, lp, v, adv, ret}, dst = {obar, oport, oact, olp, ov, oadv, oret};
    CHECK_OK(vp_ppo_cpu_gather(NULL, 4, idx, src, dst, 1));
    const double sd = sqrt(5.0 / 3.0) + 1e-8;
    for (int k = 0; k < 4; ++k) {
        CHECK(obar[k] == bar[idx[k]] && oret[k] == ret[idx[k]], "row %d gathered from %d", k, idx[k]);
        CHECK_NEAR(oadv[k], (adv[idx[k]] - 2.5) / sd, 1e-6, 0);
    }
    // the permutation: every index once, the same for the same epoch, another for the next
    const int64_t sizes[5] = {1, 2, 97, 1024, 4099};
    for (int z = 0; z < 5; ++z) {
        const int64_t N = sizes[z];
        int32_t* p0 = (int32_t*)calloc((size_t)N, 4);
        int32_t* p1 = (int32_t*)calloc((size_t)N, 4);
        int32_t* p2 = (int32_t*)calloc((size_t)N, 4);
        int* seen = (int*)calloc((size_t)N, sizeof(int));
        int64_t ctr[2] = {0, 7};
        CHECK_OK(vp_ppo_cpu_permute(NULL, N, 3, 4, ctr, p0));
        ctr[1] = 7;
        CHECK_OK(vp_ppo_cpu_permute(NULL, N, 3, 4, ctr, p1));
        CHECK_OK(vp_ppo_cpu_permute(NULL, N, 3, 4, ctr, p2));
        int same = 1, all = 1;
        int64_t moved = 0, fixed = 0;
        for (int64_t k = 0; k < N; ++k) {
            if (p0[k] >= 0 && p0[k] < N) seen[p0[k]]++;
            same &= p0[k] == p1[k];
            moved += p0[k] != p2[k];
            fixed += p0[k] == k;
        }
        for (int64_t k = 0; k < N; ++k) all &= seen[k] == 1;
        CHECK(all && same && ctr[1] == 9, "n %lld: each index once %d, repeatable %d, epoch counter %lld", (long long)N,
              all, same, (long long)ctr[1]);
        CHECK(N < 97 || (moved > N / 2 && fixed < N / 10), "n %lld: %lld moved by the next epoch, %lld fixed points",
              (long long)N, (long long)moved, (long long)fixed);
        free(p0), free(p1), free(p2), free(seen);
    }
}

int main(void) {
    RUN_TEST(test_gae_hand);
    RUN_TEST(test_logp_entropy);
    RUN_TEST(test_loss_hand);
    RUN_TEST(test_loss_grad);
    RUN_TEST(test_normalise_and_permute);
    return vpt_finish();
}
