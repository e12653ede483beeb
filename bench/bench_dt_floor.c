/* The work of one Decision Transformer update (bench_dt_floor.h). */
#include "bench_dt_floor.h"

#include "bench_train_floor.h"
#include "vulpes/env.h"

vp_bench_dt_work vp_bench_dt_count(const vp_model_cfg* m, const vp_dt_dims* d, int64_t B, int64_t n_params) {
    vp_bench_dt_work w;
    const double BK = (double)B * d->K, P = d->P, H = d->H, D = d->D, L = d->L;
    const double KE = m->encoder == VP_ENCODER_NONE ? 1 : m->window, F = m->n_features, NB = VP_ENV_BRANCHES;
    // the encoder per window: its forward and backward less the portfolio projection and the C51 heads
    w.enc_flops = BK * (vp_model_flops(m, 1, 0, 1) - 3.0 * vp_bench_heads_flops(m));
    // vp_dt_forward_macs: the products and the causal attention (both products over L (L + 1) / 2 pairs)
    const double attn_fwd = 2.0 * d->layers * (double)B * L * (L + 1.0) * D;
    const double lin_fwd = 2.0 * vp_dt_forward_macs(d, B) - attn_fwd, port_fwd = 2.0 * BK * H * P;
    w.lin_flops = 3.0 * lin_fwd - port_fwd;
    w.attn_flops = 3.5 * attn_fwd;
    w.flops = w.enc_flops + w.lin_flops + w.attn_flops;
    // a step's bar, portfolio, actions, return-to-go, timestep and valid flag, written and read
    const double row = 4.0 * (1.0 + P + NB + 3.0), window = 4.0 * KE * F, terms = 4.0;
    w.bytes = BK * (2.0 * row + window + terms) + 8.0 * 4.0 * (double)n_params;
    const double tf = w.flops / VP_BENCH_CEIL_TF32, tb = w.bytes / VP_BENCH_CEIL_BYTES;
    w.floor_s = tf > tb ? tf : tb;
    return w;
}
