/* GPU test: PPO on CUDA against the CPU.
 * - the kernels (ppo_impl.h): the sampler's choices and the permutation bit for bit, GAE, the
 *   minibatch gather with the advantage normalisation and the per-sample loss terms and
 *   gradients within 1e-5 relative, at odd sizes;
 * - one iteration of a trainer (FP32 products) on both, step by step and with the span encoded
 *   once: the same sampled actions, rewards and done flags bit for bit, the parameters after
 *   the updates within 1e-4 relative;
 * - a captured iteration replayed 100 times makes no copy, allocation or synchronisation
 *   (vp_backend_counters), and the iterations did their work (counters read afterwards);
 * - with a tiny target_kl every iteration stops after its first epoch;
 * - two CUDA runs of one config give identical metrics.jsonl and checkpoints; 23 iterations
 *   + a stop + a resume equal 40 straight.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include "test_train_util.h"

#include <math.h>

#include "gpu_twin.h"

#include "learn/ppo_impl.h"

/* The kernels of both backends. */
static const vp_ppo_kernels *g_kc = NULL, *g_kg = NULL;

static void test_kernel_parity(void) {
    CHECK_OK(vp_ppo_kernels_of("test", g_cpu, &g_kc));
    CHECK_OK(vp_ppo_kernels_of("test", g_gpu, &g_kg));
    if (!g_kc || !g_kg) return;
    const vp_action_layout lay = vp_action_layout_env();
    const int64_t sizes[3] = {1, 257, 4099};
    for (int s = 0; s < 3; ++s) {
        const int64_t n = sizes[s];
        char cas[64];
        snprintf(cas, sizeof cas, "n = %lld", (long long)n);
        // the sampler and the stored rows
        twin lg, val, bar, port, ctr, env_a, o_bar, o_port, o_act, o_lp, o_v;
        twin_2d(&lg, VP_F32, n, lay.n_heads), twin_1d(&val, VP_F32, n), twin_1d(&bar, VP_I32, n);
        twin_2d(&port, VP_F32, n, VP_ENV_PORTFOLIO), twin_1d(&ctr, VP_I32, 4), twin_2d(&env_a, VP_I32, n, 4);
        twin_1d(&o_bar, VP_I32, n), twin_2d(&o_port, VP_F32, n, VP_ENV_PORTFOLIO), twin_2d(&o_act, VP_I32, n, 4);
        twin_1d(&o_lp, VP_F32, n), twin_1d(&o_v, VP_F32, n);
        twin_rand(&lg, -3.0f, 3.0f), twin_rand(&val, -1.0f, 1.0f), twin_rand(&port, -1.0f, 1.0f);
        const int64_t c0[2] = {17 + s, 5};
        CHECK_OK(vp_upload(g_cpu, &ctr.h, c0, sizeof c0));
        CHECK_OK(vp_upload(g_gpu, &ctr.d, c0, sizeof c0));
        vp_ppo_store_ptrs hc = {(int32_t*)o_bar.h.data, (float*)o_port.h.data, (int32_t*)o_act.h.data,
                                (float*)o_lp.h.data, (float*)o_v.h.data};
        vp_ppo_store_ptrs gc = {(int32_t*)o_bar.d.data, (float*)o_port.d.data, (int32_t*)o_act.d.data,
                                (float*)o_lp.d.data, (float*)o_v.d.data};
        CHECK_OK(g_kc->sample(g_cpu, n, 99, (const float*)lg.h.data, (const float*)val.h.data,
                              (const int32_t*)bar.h.data, (const float*)port.h.data, (const int64_t*)ctr.h.data,
                              (int32_t*)env_a.h.data, hc));
        CHECK_OK(g_kg->sample(g_gpu, n, 99, (const float*)lg.d.data, (const float*)val.d.data,
                              (const int32_t*)bar.d.data, (const float*)port.d.data, (const int64_t*)ctr.d.data,
                              (int32_t*)env_a.d.data, gc));
        twin_check_bits("ppo_sample actions", cas, &o_act);
        twin_check_bits("ppo_sample env actions", cas, &env_a);
        twin_check_bits("ppo_sample portfolio", cas, &o_port);
        twin_check("ppo_sample logp", cas, &o_lp, 1e-5);
        // the permutation (one thread, integer arithmetic) and its counter
        twin perm;
        twin_1d(&perm, VP_I32, n);
        CHECK_OK(g_kc->permute(g_cpu, n, 5, VP_PPO_PERM_STREAM, (int64_t*)ctr.h.data, (int32_t*)perm.h.data));
        CHECK_OK(g_kg->permute(g_gpu, n, 5, VP_PPO_PERM_STREAM, (int64_t*)ctr.d.data, (int32_t*)perm.d.data));
        twin_check_bits("ppo_permute", cas, &perm);
        twin_check_bits("ppo_permute counter", cas, &ctr);
        // GAE over T = 7 steps of n envs, terminals here and there
        const int64_t T = 7;
        twin rw, dn, v, last, adv, ret;
        twin_1d(&rw, VP_F32, T * n), twin_1d(&dn, VP_F32, T * n), twin_1d(&v, VP_F32, T * n);
        twin_1d(&last, VP_F32, n), twin_1d(&adv, VP_F32, T * n), twin_1d(&ret, VP_F32, T * n);
        twin_rand(&rw, -1.0f, 1.0f), twin_rand(&v, -1.0f, 1.0f), twin_rand(&last, -1.0f, 1.0f);
        float* d = (float*)dn.h.data;
        for (int64_t k = 0; k < T * n; ++k) d[k] = (k % 5 == 3) ? 1.0f : 0.0f;
        twin_push(&dn);
        CHECK_OK(g_kc->gae(g_cpu, T, n, 0.99f, 0.95f, (const float*)rw.h.data, (const float*)dn.h.data,
                           (const float*)v.h.data, (const float*)last.h.data, (float*)adv.h.data, (float*)ret.h.data));
        CHECK_OK(g_kg->gae(g_gpu, T, n, 0.99f, 0.95f, (const float*)rw.d.data, (const float*)dn.d.data,
                           (const float*)v.d.data, (const float*)last.d.data, (float*)adv.d.data, (float*)ret.d.data));
        twin_check("ppo_gae adv", cas, &adv, 1e-5);
        twin_check("ppo_gae ret", cas, &ret, 1e-5);
        // gather (the permutation's first n rows of the T n rollout rows) with the normalisation
        twin mb_adv, mb_ret, mb_lp, mb_v, mb_bar, mb_port, mb_act;
        twin_1d(&mb_adv, VP_F32, n), twin_1d(&mb_ret, VP_F32, n), twin_1d(&mb_lp, VP_F32, n);
        twin_1d(&mb_v, VP_F32, n), twin_1d(&mb_bar, VP_I32, n), twin_2d(&mb_port, VP_F32, n, VP_ENV_PORTFOLIO);
        twin_2d(&mb_act, VP_I32, n, 4);
        vp_ppo_rows src_h = {(int32_t*)o_bar.h.data, (float*)o_port.h.data, (int32_t*)o_act.h.data,
                             (float*)o_lp.h.data, (float*)o_v.h.data, (float*)adv.h.data, (float*)ret.h.data};
        vp_ppo_rows src_d = {(int32_t*)o_bar.d.data, (float*)o_port.d.data, (int32_t*)o_act.d.data,
                             (float*)o_lp.d.data, (float*)o_v.d.data, (float*)adv.d.data, (float*)ret.d.data};
        vp_ppo_rows dst_h = {(int32_t*)mb_bar.h.data, (float*)mb_port.h.data, (int32_t*)mb_act.h.data,
                             (float*)mb_lp.h.data, (float*)mb_v.h.data, (float*)mb_adv.h.data, (float*)mb_ret.h.data};
        vp_ppo_rows dst_d = {(int32_t*)mb_bar.d.data, (float*)mb_port.d.data, (int32_t*)mb_act.d.data,
                             (float*)mb_lp.d.data, (float*)mb_v.d.data, (float*)mb_adv.d.data, (float*)mb_ret.d.data};
        CHECK_OK(g_kc->gather(g_cpu, n, (const int32_t*)perm.h.data, src_h, dst_h, 1));
        CHECK_OK(g_kg->gather(g_gpu, n, (const int32_t*)perm.d.data, src_d, dst_d, 1));
        twin_check_bits("ppo_gather actions", cas, &mb_act);
        twin_check("ppo_gather adv (normalised)", cas, &mb_adv, 1e-5);
        // the loss terms and gradients of the gathered rows at fresh logits and values
        twin z, zv, terms, dz, dv;
        twin_2d(&z, VP_F32, n, lay.n_heads), twin_1d(&zv, VP_F32, n), twin_2d(&terms, VP_F32, n, VP_PPO_T_COUNT);
        twin_2d(&dz, VP_F32, n, lay.n_heads), twin_1d(&dv, VP_F32, n);
        twin_rand(&z, -3.0f, 3.0f), twin_rand(&zv, -1.0f, 1.0f);
        vp_ppo_loss_dims ld = {n, lay, 0.2f, 0.3f, 0.01f, 0.5f};
        CHECK_OK(g_kc->loss(g_cpu, &ld, (const float*)z.h.data, (const float*)zv.h.data, dst_h, (float*)terms.h.data,
                            (float*)dz.h.data, (float*)dv.h.data));
        CHECK_OK(g_kg->loss(g_gpu, &ld, (const float*)z.d.data, (const float*)zv.d.data, dst_d, (float*)terms.d.data,
                            (float*)dz.d.data, (float*)dv.d.data));
        twin_check("ppo_loss terms", cas, &terms, 1e-5);
        twin_check("ppo_loss d logits", cas, &dz, 1e-5);
        twin_check("ppo_loss d value", cas, &dv, 1e-5);
        twin* all[] = {&lg, &val, &bar, &port, &ctr, &env_a, &o_bar, &o_port, &o_act, &o_lp, &o_v, &perm, &rw, &dn,
                       &v, &last, &adv, &ret, &mb_adv, &mb_ret, &mb_lp, &mb_v, &mb_bar, &mb_port, &mb_act, &z, &zv,
                       &terms, &dz, &dv};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
    }
}

static const char* const OVER[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=2",
                                   "run.precision=fp32"};

/* A PPO trainer of the test configuration on backend b (data in *d). */
static int make(vp_ppo_trainer* t, vp_train_data* d, vp_backend* b, int n, const char* const* over) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, n, over) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    if (vp_ppo_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    return 1;
}

/* Downloads n bytes of a GPU tensor into a new host array (caller frees). */
static void* fetch(const vp_tensor* t, size_t n) {
    void* p = malloc(n);
    if (p) CHECK_OK(vp_download(g_gpu, p, t, n));
    return p;
}

/* One iteration on both backends of the config of `over` (n entries) with T steps, E envs, 3
 * minibatches of 2 epochs, then 100 captured launches on CUDA. */
static void iteration_parity_and_zero_copy(int n, const char* const* over, int64_t T, int encode_once) {
    vp_ppo_trainer tc, tg;
    vp_train_data dc, dg;
    if (!make(&tc, &dc, g_cpu, n, over)) return;
    CHECK(tc.encode_once == encode_once, "the CPU trainer's collection path: encode once %d", tc.encode_once);
    if (!make(&tg, &dg, g_gpu, n, over)) {
        vp_ppo_trainer_free(&tc), vp_train_data_free(&dc);
        return;
    }
    // one iteration on both: the same rollout, nearly the same parameters
    CHECK_OK(vp_ppo_trainer_iterate(&tc, 1));
    CHECK_OK(vp_ppo_trainer_iterate(&tg, 1));
    CHECK_OK(vp_backend_sync(g_gpu));
    const size_t na = (size_t)vp_tensor_numel(&tc.r_act) * 4, nr = (size_t)vp_tensor_numel(&tc.r_reward) * 4;
    int32_t* ga = (int32_t*)fetch(&tg.r_act, na);
    float* gr = (float*)fetch(&tg.r_reward, nr);
    float* gd = (float*)fetch(&tg.r_done, nr);
    const int same = ga && gr && gd && memcmp(ga, tc.r_act.data, na) == 0 && memcmp(gr, tc.r_reward.data, nr) == 0 &&
                     memcmp(gd, tc.r_done.data, nr) == 0;
    twin_row("ppo iteration", "rollout actions, rewards, done", same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "the CUDA rollout's actions, rewards or done flags differ from the CPU's");
    const int64_t W = tc.net.n_weights;
    float* gp = (float*)fetch(&tg.net.params, (size_t)W * 4);
    const float* cp = (const float*)tc.net.params.data;
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; gp && i < W; ++i) {
        num += ((double)gp[i] - cp[i]) * ((double)gp[i] - cp[i]);
        den += (double)cp[i] * cp[i];
    }
    const double err = sqrt(num / fmax(den, 1e-30));
    twin_row("ppo iteration", "parameters after 6 updates", err, 1e-4, err <= 1e-4);
    CHECK(err <= 1e-4, "parameters after one iteration: relative error %.3e", err);
    free(ga), free(gr), free(gd), free(gp);

    // the captured iteration: 100 launches copy, allocate and sync nothing
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_ppo_trainer_iterate(&tg, 100));
    vp_backend_counters(g_gpu, &after);
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    CHECK(zero, "100 iterations: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    twin_row("ppo iteration graph", "100 launches: copies/allocs/syncs", 0.0, 0.0, zero);
    int64_t ctr[2] = {0, 0};
    int32_t step = 0;
    CHECK_OK(vp_download(g_gpu, ctr, &tg.ctr, sizeof ctr));
    CHECK_OK(vp_download(g_gpu, &step, &tg.adam_step, sizeof step));
    double st[VP_PPO_STAT_COUNT], gn = 0.0;
    CHECK_OK(vp_ppo_trainer_stats(&tg, st, &gn));
    CHECK(ctr[VP_PPO_CTR_STEP] == 101 * T && ctr[VP_PPO_CTR_EPOCH] == 101 * 2 && step == 101 * 6 && isfinite(gn) &&
              isfinite(st[VP_PPO_STAT_PG]),
          "after 101 iterations: %lld collection steps, %lld epochs, adam step %d, grad norm %g",
          (long long)ctr[VP_PPO_CTR_STEP], (long long)ctr[VP_PPO_CTR_EPOCH], step, gn);
    vp_ppo_trainer_free(&tc), vp_ppo_trainer_free(&tg);
    vp_train_data_free(&dc), vp_train_data_free(&dg);
}

static void test_iteration_parity_and_zero_copy(void) {
    // step by step (7 envs x 13 windows < the span's bars), then the span encoded once (40 x 25 > them)
    static const char* const EO[] = {"train.algo=ppo", "ppo.rollout_steps=24", "ppo.minibatches=3", "ppo.epochs=2",
                                     "run.precision=fp32", "env.n_envs=40", "env.episode_bars=7"};
    iteration_parity_and_zero_copy(5, OVER, 12, 0);
    iteration_parity_and_zero_copy(7, EO, 24, 1);
}

/* With a target_kl no update stays under, every CUDA iteration stops after its first epoch (the
 * collection and epoch graphs, approx_kl read between them), as on the CPU. */
static void test_target_kl(void) {
    static const char* const KL[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=4",
                                     "ppo.target_kl=1e-12"};
    vp_ppo_trainer tg;
    vp_train_data dg;
    if (!make(&tg, &dg, g_gpu, 5, KL)) return;
    CHECK_OK(vp_ppo_trainer_iterate(&tg, 3));
    int64_t ctr[2] = {0, 0};
    CHECK_OK(vp_download(g_gpu, ctr, &tg.ctr, sizeof ctr));
    const int ok = tg.count.learner_steps == 9 && tg.epochs_run == 1 && ctr[VP_PPO_CTR_EPOCH] == 3;
    CHECK(ok, "3 iterations: %lld updates, %lld epochs run last, %lld epochs begun", (long long)tg.count.learner_steps,
          (long long)tg.epochs_run, (long long)ctr[VP_PPO_CTR_EPOCH]);
    twin_row("ppo target_kl", "3 iterations stop after 1 epoch", 0.0, 0.0, ok);
    vp_ppo_trainer_free(&tg);
    vp_train_data_free(&dg);
}

/* Runs the PPO test config on the GPU into dir (mode, stop point). */
static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, vp_train_result* r) {
    vp_config cfg;
    const char* over[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "run.backend=cuda"};
    if (!vpt_train_cfg(&cfg, 4, over)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = mode;
    o.stop_after = stop_after;
    return vp_train_run(&cfg, g_gpu, &o, r);
}

static void test_runs_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "gpuppo1");
    vpt_tmp_dir(d2, sizeof d2, "gpuppo2");
    vpt_tmp_dir(d3, sizeof d3, "gpuppo3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, VP_RUN_CREATE, 0, &r1));
    CHECK_OK(run(d2, VP_RUN_CREATE, 0, &r2));
    CHECK_OK(run(d3, VP_RUN_CREATE, 23, &r3));
    CHECK_OK(run(d3, VP_RUN_RESUME, 0, &r3));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "two GPU PPO runs of one config differ");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed GPU PPO run differs");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    twin_row("ppo train run", "repeat; 23 + resume vs 40", 0.0, 0.0,
             a && b && c && e && strcmp(a, b) == 0 && strcmp(c, e) == 0);
    free(a), free(b), free(c), free(e);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    gpu_setup("test_gpu_ppo");
    RUN_TEST(test_kernel_parity);
    RUN_TEST(test_iteration_parity_and_zero_copy);
    RUN_TEST(test_target_kl);
    RUN_TEST(test_runs_repeat_and_resume);
    gpu_teardown();
    return vpt_finish();
}
