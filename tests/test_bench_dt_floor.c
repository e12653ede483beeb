/* `vulpes bench dt`'s work counts (bench/bench_dt_floor.c) against values counted by hand from the
 * shapes, and against vp_dt_forward_macs and the encoder's vp_model_flops. Default encoder: F 32,
 * P 8, K_enc 8, H 256, Mamba2 N 16 with NH = 4 heads, A 13; default transformer K 20 (L 60), D 128,
 * 3 blocks, 1 head, TM 1024 (env.episode_bars). */
#include <string.h>

#include "bench_dt_floor.h"
#include "bench_train_floor.h"
#include "vp_test.h"

static vp_backend* g_be = NULL;
static vp_train_parts g_parts;

/* The network of transformer shape (K, D, NH, layers) over the default encoder, TM 1024: the
 * net in *n (free it with vp_dt_net_free). */
static int make_net(int K, int D, int NH, int layers, vp_dt_net* n) {
    vp_dt_dims d;
    memset(&d, 0, sizeof d);
    d.K = K, d.L = 3 * K, d.D = D, d.NH = NH, d.layers = layers, d.TM = 1024, d.ln_eps = 1e-5f;
    memset(n, 0, sizeof *n);
    vp_status s = vp_dt_net_init(n, g_be, &g_parts.learner.model, &d, 1);
    CHECK(s == VP_OK, "vp_dt_net_init failed: %s", vp_last_error());
    return s == VP_OK;
}

/* Encoder per window: the trunk's first layer 2 K H F = 131 072 (no input gradient: 2x) and the
 * rest 2 637 824 - 131 072 = 2 506 752 (3x): 7 782 400 forward and backward. B 8192, K 20:
 * B K = 163 840 windows, 1 275 068 416 000 FLOP. The products' multiply-adds: the state linear B K H
 * D = 5 368 709 120, the portfolio projection B K P H = 335 544 320, 3 blocks of B L 12 D^2 =
 * 289 910 292 480, the head B L D A = 817 889 280: 296 432 435 200 MAC, forward 592 864 870 400 FLOP,
 * forward and backward 3x less one forward of the projection (671 088 640): 1 777 923 522 560. The
 * attention: 2 x 3 blocks x B L (L + 1) D = 23 026 728 960 forward, x 3.5 = 80 593 551 360. Total
 * 3 133 585 489 920 FLOP. */
static void test_default(void) {
    vp_dt_net n;
    if (!make_net(20, 128, 1, 3, &n)) return;
    const vp_model_cfg* m = &n.enc.cfg;
    const vp_bench_dt_work w = vp_bench_dt_count(m, &n.dims, 8192, vp_dt_net_numel(&n));
    CHECK(vp_model_flops(m, 1, 0, 0) - vp_bench_heads_flops(m) == 2637824.0, "encoder forward %.1f FLOP per window",
          vp_model_flops(m, 1, 0, 0) - vp_bench_heads_flops(m));
    CHECK(w.enc_flops == 1275068416000.0, "encoder %.1f FLOP, expected 1275068416000", w.enc_flops);
    CHECK(vp_dt_forward_macs(&n.dims, 8192) == 296432435200.0 + 23026728960.0 / 2.0,
          "vp_dt_forward_macs %.1f, expected 307945799680", vp_dt_forward_macs(&n.dims, 8192));
    CHECK(w.lin_flops == 1777923522560.0, "products %.1f FLOP, expected 1777923522560", w.lin_flops);
    CHECK(w.attn_flops == 80593551360.0, "attention %.1f FLOP, expected 80593551360", w.attn_flops);
    CHECK(w.flops == 3133585489920.0, "update %.1f FLOP, expected 3133585489920", w.flops);
    // 1 047 993 trained parameters: the encoder's trunk 75 264, Mamba2 207 532, portfolio 2304; the
    // inputs 35 072 + 128 TM = 166 144, 3 blocks of 198 272, the final LayerNorm and head 1933
    CHECK(vp_dt_net_numel(&n) == 1047993, "%lld parameters, expected 1047993", (long long)vp_dt_net_numel(&n));
    // bytes: per step 2 x 4 (1 + 8 + 4 + 3) = 128 of the batch, the window 4 x 8 x 32 = 1024, the loss term 4:
    // 163 840 x 1156 = 189 399 040; 8 x 4 x 1 047 993 = 33 535 776 of the gradient and AdamW: 222 934 816
    CHECK(w.bytes == 222934816.0, "%.1f bytes, expected 222934816", w.bytes);
    CHECK_NEAR(w.floor_s, 3133585489920.0 / VP_BENCH_CEIL_TF32, 0.0, 1e-15); /* FLOP-bound */
    vp_dt_net_free(&n);
}

/* B 3, K 5 (L 15), D 16, 2 heads, 2 blocks: encoder 15 x 7 782 400 = 116 736 000; products: state
 * 15 x 256 x 16 = 61 440, portfolio 15 x 2048 = 30 720, blocks 2 x 45 x 12 x 256 = 276 480, head 45 x
 * 16 x 13 = 9360: 378 000 MAC, 3 x 756 000 - 61 440 = 2 206 560 FLOP; attention 2 x 2 x 3 x 15 x 16 x 16
 * = 46 080 forward, 161 280 with the backward: 119 103 840 FLOP. */
static void test_small(void) {
    vp_dt_net n;
    if (!make_net(5, 16, 2, 2, &n)) return;
    const vp_bench_dt_work w = vp_bench_dt_count(&n.enc.cfg, &n.dims, 3, vp_dt_net_numel(&n));
    CHECK(vp_dt_forward_macs(&n.dims, 3) == 378000.0 + 23040.0, "vp_dt_forward_macs %.1f, expected 401040",
          vp_dt_forward_macs(&n.dims, 3));
    CHECK(w.enc_flops == 116736000.0, "encoder %.1f FLOP, expected 116736000", w.enc_flops);
    CHECK(w.lin_flops == 2206560.0, "products %.1f FLOP, expected 2206560", w.lin_flops);
    CHECK(w.attn_flops == 161280.0, "attention %.1f FLOP, expected 161280", w.attn_flops);
    CHECK(w.flops == 119103840.0, "update %.1f FLOP, expected 119103840", w.flops);
    vp_dt_net_free(&n);
}

int main(void) {
    vp_config cfg;
    vp_config_defaults(&cfg);
    CHECK_OK(vp_backend_cpu_init(&g_be));
    CHECK_OK(vp_train_parts_make(&cfg, 32, &g_parts));
    if (g_be) {
        RUN_TEST(test_default);
        RUN_TEST(test_small);
    }
    vp_backend_free(g_be);
    return vpt_finish();
}
