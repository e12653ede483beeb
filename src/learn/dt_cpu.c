/* The Decision Transformer's kernels on the CPU: loops through the shared math of dt_math.h
 * (the same functions the CUDA kernels call). */
#include "learn/dt_impl.h"

vp_status vp_dt_cpu_embed(vp_backend* b, const vp_dt_embed_args* a, float* x0) {
    (void)b;
    const vp_dt_dims* d = &a->d;
    for (int64_t r = 0; r < a->B * d->K; ++r)
        for (int c = 0; c < d->D; ++c)
            vp_dt_embed_at(r, c, d->K, d->L, d->D, d->TM, &a->lay, a->stok, a->rtg, a->act, a->ts, a->ret_w, a->ret_b,
                           a->act_e, a->time_e, x0);
    return VP_OK;
}

vp_status vp_dt_cpu_embed_backward(vp_backend* b, const vp_dt_embed_args* a, const float* dx0, float* dstok,
                                   float* g_ret_w, float* g_ret_b, float* g_act_e, float* g_time_e) {
    (void)b;
    const vp_dt_dims* d = &a->d;
    const int64_t BK = a->B * d->K;
    for (int64_t r = 0; r < BK; ++r)
        for (int c = 0; c < d->D; ++c) vp_dt_embed_dstate_at(r, c, d->K, d->L, d->D, dx0, dstok);
    for (int c = 0; c < d->D; ++c) vp_dt_embed_dret_at(c, BK, d->K, d->L, d->D, a->rtg, dx0, g_ret_w, g_ret_b);
    for (int row = 0; row < d->A; ++row)
        for (int c = 0; c < d->D; ++c) vp_dt_embed_dact_at(row, c, BK, d->K, d->L, d->D, &a->lay, a->act, dx0, g_act_e);
    // the timestep table: zero, then every step's three tokens added in step order (the order of
    // vp_dt_embed_dtime_at's sum, so the same bits)
    for (int64_t k = 0; k < (int64_t)d->TM * d->D; ++k) g_time_e[k] = 0.0f;
    for (int64_t r = 0; r < BK; ++r) {
        const int row = vp_dt_time_row(a->ts[r], d->TM);
        const int64_t t0 = vp_dt_token(r / d->K, (int)(r % d->K), 0, d->L) * d->D;
        for (int c = 0; c < d->D; ++c)
            g_time_e[(int64_t)row * d->D + c] += dx0[t0 + c] + dx0[t0 + d->D + c] + dx0[t0 + 2 * d->D + c];
    }
    return VP_OK;
}

vp_status vp_dt_cpu_gelu(vp_backend* b, int64_t n, const float* x, float* y) {
    (void)b;
    for (int64_t i = 0; i < n; ++i) y[i] = vp_dt_gelu(x[i]);
    return VP_OK;
}

vp_status vp_dt_cpu_gelu_backward(vp_backend* b, int64_t n, const float* x, const float* dy, float* dx) {
    (void)b;
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * vp_dt_gelu_grad(x[i]);
    return VP_OK;
}

vp_status vp_dt_cpu_count(vp_backend* b, int64_t n, const float* valid, float* count) {
    (void)b;
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += valid[i];
    count[0] = s;
    return VP_OK;
}

vp_status vp_dt_cpu_loss(vp_backend* b, const vp_dt_dims* d, const vp_action_layout* lay, int64_t B,
                         const float* logits, const int32_t* act, const float* valid, const float* count, float* terms,
                         float* d_logits) {
    (void)b;
    const float inv = count[0] > 0.0f ? 1.0f / count[0] : 0.0f;
    for (int64_t t = 0; t < B * d->L; ++t) vp_dt_loss_row(t, d->K, d->L, lay, logits, act, valid, inv, terms, d_logits);
    return VP_OK;
}

vp_status vp_dt_cpu_sample(vp_backend* b, const vp_dt_dims* dd, int64_t B, uint64_t seed, const int32_t* index,
                           vp_dt_rows_ptrs d, vp_dt_batch_ptrs x) {
    (void)b;
    for (int64_t s = 0; s < B; ++s)
        vp_dt_sample_seq(s, dd->K, dd->P, seed, VP_DT_SAMPLE_STREAM, (uint64_t)index[0], d, x);
    return VP_OK;
}

vp_status vp_dt_cpu_hist_push(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, const float* enc,
                              const float* port, vp_dt_hist_ptrs h) {
    (void)b;
    for (int64_t i = 0; i < N; ++i)
        for (int c = 0; c < d->H + d->P + 1; ++c) vp_dt_hist_push_at(i, c, d->K, d->H, d->P, steps[i], enc, port, h);
    return VP_OK;
}

vp_status vp_dt_cpu_hist_seq(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, vp_dt_hist_ptrs h,
                             float* e_seq, vp_dt_batch_ptrs x) {
    (void)b;
    for (int64_t i = 0; i < N; ++i)
        for (int j = 0; j < d->K; ++j)
            for (int c = 0; c < d->H + d->P + 1; ++c) vp_dt_hist_seq_at(i, j, c, d->K, d->H, d->P, steps[i], h, e_seq, x);
    return VP_OK;
}

vp_status vp_dt_cpu_readout(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, const float* logits,
                            float* scores) {
    (void)b;
    for (int64_t i = 0; i < N; ++i)
        for (int a = 0; a < d->A; ++a) vp_dt_readout_at(i, a, d->K, d->L, d->A, steps[i], logits, scores);
    return VP_OK;
}

vp_status vp_dt_cpu_hist_observe(vp_backend* b, const vp_dt_dims* d, int64_t N, int32_t* steps,
                                 const int32_t* actions, const float* rewards, vp_dt_hist_ptrs h) {
    (void)b;
    for (int64_t i = 0; i < N; ++i) vp_dt_hist_observe_at(i, d->K, steps, actions, rewards, h);
    return VP_OK;
}

const vp_dt_kernels vp_dt_cpu = VP_KERNEL_TABLE(VP_DT_KERNELS, vp_dt, vp_dt_cpu);
