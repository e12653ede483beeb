/* The work of one env step of collection (bench_train_floor.h). */
#include "bench_train_floor.h"

#include <string.h>

#include "vulpes/env.h"
#include "vulpes/model_span.h"

double vp_bench_heads_flops(const vp_model_cfg* m) {
    const double H = m->hidden, P = m->n_portfolio, HH = m->head_hidden, Z = m->n_atoms;
    const double A = vp_model_cfg_actions(m);
    // port.w, c51.v1 and c51.a1, c51.v2, c51.a2 (vp_model_flops's heads terms)
    return 2.0 * (H * P + 2.0 * HH * H + Z * HH + A * Z * HH);
}

vp_bench_floor vp_bench_collect_floor(const vp_collector* c, const vp_model_cfg* m) {
    vp_bench_floor f;
    memset(&f, 0, sizeof f);
    const double E = (double)c->n_envs, S = c->cfg.steps > 0 ? (double)c->cfg.steps : 1.0;
    const double H = m->hidden, P = VP_ENV_PORTFOLIO, A = vp_model_cfg_actions(m), NB = VP_ENV_BRANCHES;
    const double heads = vp_bench_heads_flops(m);
    double enc = vp_model_flops(m, 1, 0, 0) - heads;
    f.encode_once = c->encode_once;
    f.span_rows = c->encode_once ? c->span_rows : 0;
    f.enc_rows = c->encode_once ? (double)c->span_rows / (E * S) : 1.0;
    // shared rows: a window's own Kt trunk and in_proj rows replaced by its share of the span's
    // per-bar rows (vulpes/model_span.h)
    const int Kt = m->encoder == VP_ENCODER_NONE ? 1 : m->window;
    double bar_rows = m->window; /* feature rows read per encoded window */
    f.shared = c->encode_once && c->span_shared;
    if (f.shared) {
        const double R = (double)c->span.windows, NR = (double)c->span.rows;
        enc += vp_model_span_flops(m, c->span.windows, c->span.rows) / R - vp_model_span_flops(m, 1, Kt);
        bar_rows = NR / R;
    }
    f.enc_flops = enc;
    f.flops = f.enc_rows * enc + heads;
    // the step's tensors read by the push (bar, window end, portfolio, actions, reward, done,
    // next bar, next portfolio) and as much written into the ring
    const double replay = 2.0 * (4 + 4 + 4 * P + 4 * NB + 4 + 4 + 4 + 4 * P);
    // heads: encoding row and portfolio in, Q out; act: Q in, actions out
    const double heads_io = 4.0 * (H + P + A) + 4.0 * A + 4.0 * NB;
    const double gather = c->encode_once ? 2.0 * 4.0 * H : 0.0;
    const double window = 4.0 * (bar_rows * m->n_features + H); /* feature rows in, encoding out */
    f.bytes = (double)vp_env_bytes_per_step() + replay + heads_io + gather + f.enc_rows * window;
    const double tf = f.flops / VP_BENCH_CEIL_TF32, tb = f.bytes / VP_BENCH_CEIL_BYTES;
    f.floor_s = tf > tb ? tf : tb;
    return f;
}
