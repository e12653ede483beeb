/* The work of PPO's collection and update (bench_ppo_floor.h). */
#include "bench_ppo_floor.h"

#include <string.h>

#include "bench_train_floor.h"
#include "vulpes/env.h"

/* The larger of FLOPs over the TF32 ceiling and bytes over the memory-bound rate. */
static double floor_of(double flops, double bytes) {
    const double tf = flops / VP_BENCH_CEIL_TF32, tb = bytes / VP_BENCH_CEIL_BYTES;
    return tf > tb ? tf : tb;
}

vp_bench_ppo_work vp_bench_ppo_count(const vp_ppo_trainer* t) {
    vp_bench_ppo_work w;
    memset(&w, 0, sizeof w);
    const vp_model_cfg* m = &t->net.enc.cfg;
    const double E = (double)t->env.n_envs, T = (double)t->pc.rollout_steps;
    const double M = (double)vp_tensor_numel(&t->m_bar), W = (double)vp_ppo_net_numel(&t->net);
    const double H = m->hidden, P = m->n_portfolio, HH = m->head_hidden, A = vp_model_cfg_actions(m);
    const double NB = VP_ENV_BRANCHES, K = m->encoder == VP_ENCODER_NONE ? 1 : m->window, F = m->n_features;
    // the encoder: the DQN network's forward less its portfolio projection and C51 heads (all
    // of which vp_model_flops counts as products whose input needs a gradient)
    const double dqn_heads = vp_bench_heads_flops(m);
    w.enc_fwd = vp_model_flops(m, 1, 0, 0) - dqn_heads;
    const double enc_fb = vp_model_flops(m, 1, 0, 1) - 3.0 * dqn_heads;
    // the portfolio projection, the policy MLP H -> HH -> A and the value MLP H -> HH -> 1
    w.heads_fwd = 2.0 * (H * P + HH * H + A * HH + HH * H + HH);
    const double heads_fb = 3.0 * w.heads_fwd - 2.0 * H * P; /* the portfolio needs no input gradient */
    // collection: T steps and the bootstrap's heads per env, the span's windows or one per step
    const double hs = (T + 1.0) / T;
    w.enc_rows = t->encode_once ? (double)t->span_rows / (E * T) : hs;
    w.col_flops = w.enc_rows * w.enc_fwd + hs * w.heads_fwd;
    const double heads_io = 4.0 * (H + P + A + 1.0);                                  /* e, p in; logits, value out */
    const double sample = 4.0 * (A + 1.0 + 1.0 + P) + 4.0 * (NB + 1.0 + P + NB + 1.0 + 1.0); /* in; env + rollout out */
    const double gather = t->encode_once ? 2.0 * 4.0 * H : 0.0;
    const double window = 4.0 * (K * F + H);
    const double gae = 4.0 * 5.0; /* reward, done, value in; advantage, return out */
    w.col_bytes = (double)vp_env_bytes_per_step() + hs * (heads_io + gather) + sample + w.enc_rows * window + gae;
    w.col_floor_s = floor_of(w.col_flops, w.col_bytes);
    // update: per row and epoch, the forward and backward; bytes of the row itself and its
    // share of the gradient write and AdamW (params, grads, m, v read; params, m, v written)
    w.upd_flops = enc_fb + heads_fb;
    const double row = 4.0 * (1.0 + P + NB + 4.0);
    const double loss_io = 4.0 * (A + 1.0) + 4.0 * (VP_PPO_STAT_COUNT + A + 1.0);
    w.upd_bytes = 4.0 + 4.0 + 2.0 * row + 4.0 * K * F + loss_io + 8.0 * 4.0 * W / M;
    w.upd_floor_s = floor_of(w.upd_flops, w.upd_bytes);
    return w;
}
