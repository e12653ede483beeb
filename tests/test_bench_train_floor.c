/* `vulpes bench train`'s work counts of collection (bench/bench_train_floor.c) at the default
 * network against hand-computed values, on the three paths: step by step, encode once with each
 * window encoded alone, encode once with shared rows (vulpes/model_span.h).
 * Default network: F 32, P 8, K 8, H 256, Mamba2 N 16 with NH = 4 heads, HH 128, Z 51, A 13. */
#include <string.h>

#include "bench_train_floor.h"
#include "vp_test.h"

/* A collector with only the fields vp_bench_collect_floor reads. */
static vp_collector collector(int64_t E, int64_t S, int once, int shared, int64_t R, int64_t rows) {
    vp_collector c;
    memset(&c, 0, sizeof c);
    c.n_envs = E;
    c.cfg.steps = S;
    c.encode_once = once;
    c.span_rows = once ? R : 0;
    c.span_shared = shared;
    c.span.windows = shared ? R : 0;
    c.span.rows = shared ? rows : 0;
    return c;
}

/* Per bar: first layer 2 H F = 16 384, trunk.w2 2 H H = 131 072, in_proj x, B, C, dt 2 (H + 2N + NH) H
 * = 149 504: 296 960; per window z and out_proj 2 x 2 H H = 262 144. A window alone: 8 x 296 960 +
 * 262 144 = 2 637 824. Heads: 2 (H P + 2 HH H + Z HH + A Z HH) = 2 (2048 + 65 536 + 6528 + 84 864)
 * = 317 952. */
static void test_counts(void) {
    const vp_model_cfg m = vp_model_cfg_default();
    const double heads = 317952.0, alone = 2637824.0, bar = 296960.0, win = 262144.0;
    CHECK(vp_bench_heads_flops(&m) == heads, "heads %.1f FLOP, expected %.1f", vp_bench_heads_flops(&m), heads);
    // step by step: one window and the heads per env step
    vp_collector c = collector(4096, 1, 0, 0, 0, 0);
    vp_bench_floor f = vp_bench_collect_floor(&c, &m);
    CHECK(!f.encode_once && !f.shared && f.enc_rows == 1.0, "step by step: once %d shared %d", f.encode_once, f.shared);
    CHECK(f.enc_flops == alone && f.flops == alone + heads, "step by step: %.1f FLOP, expected %.1f", f.flops,
          alone + heads);
    // encode once, each window alone: 140 000 windows over 65 536 x 64 env steps
    const double R = 140000.0, ES = 65536.0 * 64.0;
    c = collector(65536, 64, 1, 0, 140000, 0);
    f = vp_bench_collect_floor(&c, &m);
    CHECK(f.encode_once && !f.shared && f.enc_rows == R / ES, "once: %.10g windows per env step", f.enc_rows);
    CHECK_NEAR(f.flops, R / ES * alone + heads, 0.0, 1e-12);
    const double b_once = f.bytes;
    // shared rows: 140 007 bars' rows, then each window's z and out_proj
    c = collector(65536, 64, 1, 1, 140000, 140007);
    f = vp_bench_collect_floor(&c, &m);
    const double enc = bar * 140007.0 / R + win;
    CHECK(f.shared, "shared rows are counted as such");
    CHECK_NEAR(f.enc_flops, enc, 0.0, 1e-12);
    CHECK_NEAR(f.flops, R / ES * enc + heads, 0.0, 1e-12);
    CHECK(f.enc_flops < 0.22 * alone, "shared: %.0f FLOP per window against %.0f alone", f.enc_flops, alone);
    // bytes: a window's feature rows become its share of the bars, 4 (140 007 / 140 000 x 32 + 256) for 4 (8 x 32 + 256)
    CHECK_NEAR(b_once - f.bytes, R / ES * 4.0 * (8.0 * 32.0 - 140007.0 / R * 32.0), 1e-9, 1e-9);
    const double tf = f.flops / VP_BENCH_CEIL_TF32, tb = f.bytes / VP_BENCH_CEIL_BYTES;
    CHECK(f.floor_s == (tf > tb ? tf : tb), "the floor is the larger of the two");
}

int main(void) {
    RUN_TEST(test_counts);
    return vpt_finish();
}
