/* `vulpes bench ppo`'s work counts (bench/bench_ppo_floor.c) at the default model against
 * hand-computed values: the encoder's and the heads' FLOPs, a row's forward and backward, the
 * collection per env step on both paths, the bytes, the floors, the parameters trained.
 * Default model: F 32, P 8, K 8, H 256, Mamba2 N 16 with NH = 4 heads, HH 128, A 13. */
#include <string.h>

#include "bench_ppo_floor.h"
#include "bench_train_floor.h"
#include "vp_test.h"

static vp_backend* g_be = NULL;
static vp_ppo_trainer g_t; /* only the fields vp_bench_ppo_count reads are set */

/* The default network on the CPU, n_envs E, T steps, minibatch M, the collection path. */
static int setup(int64_t E, int64_t T, int64_t M, int once, int64_t span_rows) {
    g_t.env.n_envs = E;
    g_t.pc.rollout_steps = T;
    g_t.m_bar = vp_tensor_1d(NULL, VP_I32, VP_MEM_HOST, M);
    g_t.encode_once = once;
    g_t.span_rows = span_rows;
    CHECK(g_t.net.n_weights > 0, "the default network was not made");
    return g_t.net.n_weights > 0;
}

/* Encoder per window: trunk 2 K H F = 131 072 (first layer) + 2 K H H = 1 048 576, Mamba2 in_proj
 * 2 K (H + 2N + NH) H = 1 196 032, z and out_proj 2 x 2 H H = 262 144: 2 637 824. Heads:
 * 2 (H P + HH H + A HH + HH H + HH) = 2 (2048 + 32 768 + 1664 + 32 768 + 128) = 138 752. A row's
 * forward and backward: 2 x 131 072 + 3 x 2 506 752 + 3 x 138 752 - 2 x 2048 = 8 194 560. */
static void test_flops(void) {
    if (!setup(4096, 128, 131072, 1, 139865)) return;
    const vp_bench_ppo_work w = vp_bench_ppo_count(&g_t);
    CHECK(w.enc_fwd == 2637824.0, "encoder forward %.1f FLOP, expected 2637824", w.enc_fwd);
    CHECK(w.heads_fwd == 138752.0, "heads forward %.1f FLOP, expected 138752", w.heads_fwd);
    CHECK(w.upd_flops == 8194560.0, "update row %.1f FLOP, expected 8194560", w.upd_flops);
    CHECK_NEAR(w.upd_floor_s, 8194560.0 / VP_BENCH_CEIL_TF32, 0.0, 1e-15);
    // 352 698 trained parameters: trunk 75 264, Mamba2 207 532, portfolio 2304, heads 67 598
    CHECK(vp_ppo_net_numel(&g_t.net) == 352698, "%lld parameters, expected 352698",
          (long long)vp_ppo_net_numel(&g_t.net));
}

/* 4096 envs, T 128, the span of 139 865 bars encoded once: 139 865 / 524 288 windows per env
 * step; FLOPs 139 865 x 2 637 824 / 524 288 = 703 695.78125 + 129 / 128 x 138 752 = 139 836:
 * 843 531.78125. Bytes: the env step 244, 129 / 128 x (heads 4 (256 + 8 + 13 + 1) = 1112 + gather
 * 2048) = 3184.6875, the sampler 92 in + 76 out = 168, the windows 139 865 / 524 288 x 4 (8 x 32
 * + 256) = 546.34765625, GAE 20: 4163.03515625. The update row at M = 131 072: permutation and
 * index 8, the gather 2 x 4 (1 + 8 + 4 + 4) = 136, the window's features 1024, the loss 56 in +
 * 80 out, 8 x 4 x 352 698 / 131 072 = 86.10791015625 of the optimiser: 1390.10791015625. */
static void test_encode_once(void) {
    if (!setup(4096, 128, 131072, 1, 139865)) return;
    CHECK(vp_env_bytes_per_step() == 244, "env step %zu bytes, expected 244", vp_env_bytes_per_step());
    const vp_bench_ppo_work w = vp_bench_ppo_count(&g_t);
    CHECK(w.enc_rows == 139865.0 / 524288.0, "%.10g windows per env step", w.enc_rows);
    CHECK(w.col_flops == 843531.78125, "collection %.6f FLOP per env step, expected 843531.78125", w.col_flops);
    CHECK(w.col_bytes == 4163.03515625, "collection %.10f bytes per env step, expected 4163.03515625", w.col_bytes);
    CHECK_NEAR(w.col_floor_s, 843531.78125 / VP_BENCH_CEIL_TF32, 0.0, 1e-15); /* FLOP-bound */
    CHECK(w.upd_bytes == 1390.10791015625, "update %.12f bytes per row, expected 1390.10791015625", w.upd_bytes);
}

/* 32 envs, T 16, step by step: 17 / 16 windows and heads per env step: FLOPs 17 / 16 x (2 637 824
 * + 138 752) = 2 950 112; bytes 244 + 17 / 16 x 1112 (heads, no gather) + 168 + 17 / 16 x 2048
 * (windows) + 20 = 3789.5; the byte floor 3789.5 / 4.2e12 s is under the FLOP floor. */
static void test_stepwise(void) {
    if (!setup(32, 16, 128, 0, 0)) return;
    const vp_bench_ppo_work w = vp_bench_ppo_count(&g_t);
    CHECK(w.enc_rows == 17.0 / 16.0, "%.10g windows per env step, expected 17 / 16", w.enc_rows);
    CHECK(w.col_flops == 2950112.0, "collection %.3f FLOP per env step, expected 2950112", w.col_flops);
    CHECK(w.col_bytes == 3789.5, "collection %.6f bytes per env step, expected 3789.5", w.col_bytes);
    CHECK_NEAR(w.col_floor_s, 2950112.0 / VP_BENCH_CEIL_TF32, 0.0, 1e-15);
}

int main(void) {
    vp_config cfg;
    vp_config_defaults(&cfg);
    vp_train_parts parts;
    memset(&g_t, 0, sizeof g_t);
    CHECK_OK(vp_backend_cpu_init(&g_be));
    CHECK_OK(vp_train_parts_make(&cfg, 32, &parts));
    if (g_be) CHECK_OK(vp_ppo_net_init(&g_t.net, g_be, &parts.learner.model, 1));
    RUN_TEST(test_flops);
    RUN_TEST(test_encode_once);
    RUN_TEST(test_stepwise);
    vp_ppo_net_free(&g_t.net);
    vp_backend_free(g_be);
    return vpt_finish();
}
