/* GPU parity of the agent network: the same model (same seed, so the same parameters)
 * on the CPU and CUDA backends, the same inputs, at odd small shapes and at the default
 * model with B = 8192.
 * Forward: the GPU's outputs against the CPU's, norm-wise relative, 1e-5 (FP32 GEMMs) or
 * 1e-2 (TF32 GEMMs).
 * Backward: on identical forward state. After the two forwards the CPU's activations
 * (ReLU outputs, LayerNorm statistics, Mamba2 conv outputs, dt, ...) are uploaded over
 * the GPU's, then both backwards run. Comparing backwards after separate forwards does
 * not work at B = 8192: the forwards agree to ~1e-7, but among the ~10^6 (heads) to
 * ~10^7 (trunk, IQN) units per ReLU layer a few pre-activations lie within rounding of 0,
 * their masks differ between the two forwards, and each flip moves a column of a weight
 * gradient by O(1 / sqrt(B)): ~1e-3 norm-wise, growing with B, not a defect.
 * Gradient tolerances (grad_tol): FP32 1e-5 plus the drift of reductions over n rows
 * (1.4e-5 to 4.1e-5), more for the Mamba2 head and conv parameters, whose batch sums
 * cancel (measured on the CPU's per-sample partials); TF32 1e-2 from the 2^-11 operand
 * rounding through at most 8 dependent GEMMs, times the same cancellation.
 * Then the scan oracle on the GPU, the no-allocation guard and the time of a forward and
 * a backward at B = 8192, piece by piece. Runs on a GPU machine only. */
#include "gpu_twin.h"
#include "model/cuda_mops.h"
#include "model/model_internal.h"

/* One network shape and batch. */
typedef struct model_case {
    const char* name;
    int mamba, F, P, K, H, PD, N, CW, HH, Z, nb, sizes[4], NC;
    int64_t B;
    int T;
    vp_precision prec;
} model_case;

static const model_case CASES[] = {
    {"small K3", 1, 5, 3, 3, 8, 4, 3, 4, 6, 7, 2, {3, 2}, 4, 4, 3, VP_PREC_FP32},
    {"small no mamba", 0, 5, 3, 3, 8, 4, 3, 4, 6, 7, 2, {3, 2}, 4, 5, 3, VP_PREC_FP32},
    {"odd H96 PD32 N5 K7", 1, 7, 5, 7, 96, 32, 5, 3, 33, 11, 3, {2, 1, 4}, 9, 333, 5, VP_PREC_FP32},
    {"N20 K9 B77", 1, 4, 2, 9, 64, 16, 20, 4, 16, 5, 2, {2, 2}, 3, 77, 2, VP_PREC_FP32},
    {"default B8192", 1, 32, 8, 8, 256, 64, 16, 4, 128, 51, 4, {3, 4, 3, 3}, 64, 8192, 64, VP_PREC_FP32},
    {"default B8192 tf32", 1, 32, 8, 8, 256, 64, 16, 4, 128, 51, 4, {3, 4, 3, 3}, 64, 8192, 64, VP_PREC_TF32},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

static vp_model_cfg cfg_of(const model_case* k) {
    vp_model_cfg c = vp_model_cfg_default();
    c.encoder = k->mamba ? VP_ENCODER_MAMBA2 : VP_ENCODER_NONE;
    c.n_features = k->F;
    c.n_portfolio = k->P;
    c.window = k->K;
    c.hidden = k->H;
    c.mamba_head_dim = k->PD;
    c.mamba_state = k->N;
    c.mamba_conv = k->CW;
    c.head_hidden = k->HH;
    c.n_atoms = k->Z;
    c.n_branches = k->nb;
    for (int i = 0; i < k->nb; ++i) c.branch_sizes[i] = k->sizes[i];
    c.iqn_cos = k->NC;
    return c;
}

/* ||gpu - cpu|| / ||cpu|| of two views of n floats (gpu in device memory); prints a row. */
static double compare(const char* what, const char* cas, const vp_tensor* cpu_t, const vp_tensor* gpu_t, int64_t n,
                      double tol) {
    float* g = (float*)malloc(sizeof(float) * (size_t)n);
    CHECK_OK(vp_download(g_gpu, g, gpu_t, sizeof(float) * (size_t)n));
    const float* c = (const float*)cpu_t->data;
    double num = 0, den = 0;
    int64_t nan = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(g[i]) || isnan(c[i])) {
            nan++;
            continue;
        }
        num += ((double)g[i] - c[i]) * ((double)g[i] - c[i]);
        den += (double)c[i] * c[i];
    }
    double err = den > 0 ? sqrt(num / den) : sqrt(num);
    int ok = nan == 0 && err <= tol;
    twin_row(what, cas, err, tol, ok);
    CHECK(ok, "%s %s: rel err %.3e (tol %.1e), %lld NaN", what, cas, err, tol, (long long)nan);
    free(g);
    return err;
}

/* Gives the GPU activations the CPU's forward state: both arenas come from the same
 * layout function with the same configuration, batch, taus and backward flag, so every
 * tensor sits at the same offset; the CPU arena's used bytes (all saved activations, the
 * outputs and the backward's scratch) are uploaded over the GPU's in one copy. The host
 * fields (batch, n_taus, state) already agree: both forwards ran on the same inputs. */
static void share_forward_state(const vp_model_acts* ac, vp_model_acts* ag, const char* cas) {
    const char* cb = (const char*)ac->arena.block.dev;
    const char* gb = (const char*)ag->arena.block.dev;
    // every tensor field, idx .. d_t2 (consecutive vp_tensor members), at the same offset
    // and size on both sides
    const vp_tensor* tc = &ac->idx;
    const vp_tensor* tg = &ag->idx;
    const int64_t nt = (int64_t)((&ac->d_t2 - &ac->idx) + 1);
    int same = ac->arena.used == ag->arena.used && ac->arena.used % sizeof(float) == 0 && ac->batch == ag->batch &&
               ac->n_taus == ag->n_taus && ac->state == ag->state && ac->for_backward && ag->for_backward;
    for (int64_t i = 0; i < nt && same; ++i) {
        const int64_t oc = tc[i].data ? (int64_t)((const char*)tc[i].data - cb) : -1;
        const int64_t og = tg[i].data ? (int64_t)((const char*)tg[i].data - gb) : -1;
        same = oc == og && vp_tensor_numel(&tc[i]) == vp_tensor_numel(&tg[i]);
    }
    CHECK(same, "%s: the CPU and GPU activations are laid out differently", cas);
    if (!same) return;
    vp_tensor dst = vp_tensor_1d(ag->arena.block.dev, VP_F32, ag->arena.block.mem,
                                 (int64_t)(ag->arena.used / sizeof(float))); // [used / 4] whole arena
    CHECK_OK(vp_upload(g_gpu, &dst, ac->arena.block.host, ac->arena.used));
}

/* Cancellation of the batch sum g = sum_b p[b, :] of per-sample partials p [B, C] (host):
 * k1 = ||sum_b |p_b| || / ||g|| (worst case), k2 = sqrt(sum_b ||p_b||^2) / ||g||
 * (independent per-sample errors). */
static void batch_kappas(const vp_tensor* p, int64_t B, double* k1, double* k2) {
    const int64_t C = vp_tensor_cols(p);
    const float* x = (const float*)p->data;
    double sa2 = 0, sq = 0, g2 = 0;
    for (int64_t j = 0; j < C; ++j) {
        double s = 0, sa = 0;
        for (int64_t b = 0; b < B; ++b) {
            const double v = x[b * C + j];
            s += v, sa += fabs(v), sq += v * v;
        }
        sa2 += sa * sa, g2 += s * s;
    }
    *k1 = g2 > 0 ? sqrt(sa2 / g2) : 1.0;
    *k2 = g2 > 0 ? sqrt(sq / g2) : 1.0;
}

/* Norm-wise tolerance of one parameter gradient, both backwards on the same forward state.
 * n: rows of its last reduction (B, B * taus for IQN, B * K for the trunk and in_proj);
 * k1, k2: batch_kappas of its per-sample partials (1, 1 where the last reduction is a GEMM
 * or a column sum of random-sign upstream gradients).
 * FP32: every per-sample term differs by at most ~1e-5 relative (a few ulps through the
 *   chain of GEMMs and pointwise kernels), amplified by k2 for independent errors; the two
 *   reductions' orders differ: a sequentially blocked FP32 sum of n random-sign terms drifts
 *   by eps sqrt(n / 2) relative, a tree sum at worst by eps log2(n) k1 (the larger is used).
 *   Heads (n = 8192): 1.4e-5; trunk (n = 65536): 2.1e-5; IQN (n = 524288): 4.1e-5.
 * TF32: operands rounded to 10 mantissa bits, u = 2^-11 relative each, so 2u per product
 *   and GEMM; the deepest gradient (trunk.w1) passes through at most 8 dependent GEMMs
 *   (C51 or IQN head x2, out_proj, in_proj, trunk x2, plus the weight GEMM): 8 x 2u = 7.8e-3,
 *   taken as 1e-2, times k2 for the per-sample partials' batch sums. */
static double grad_tol(int tf32, int64_t n, double k1, double k2) {
    const double eps = 5.96e-8, k2c = k2 > 1 ? k2 : 1;
    if (tf32) return 1e-2 * k2c;
    const double seq = eps * sqrt((double)n / 2), tree = eps * log2((double)n) * k1;
    return 1e-5 * k2c + (seq > tree ? seq : tree);
}

/* out = milliseconds per call of a vp_status expression on the GPU (3 warm-up calls, then 20). */
#define TIME_MS(out, expr)                                                       \
    do {                                                                         \
        for (int w_ = 0; w_ < 3; ++w_) CHECK_OK(expr);                           \
        CHECK_OK(vp_backend_sync(g_gpu));                                        \
        double t0_ = vp_clock_s();                                                    \
        for (int i_ = 0; i_ < 20; ++i_) CHECK_OK(expr);                          \
        CHECK_OK(vp_backend_sync(g_gpu));                                        \
        out = 1e3 * (vp_clock_s() - t0_) / 20;                                        \
    } while (0)

static void run_case(const model_case* k) {
    const vp_model_cfg c = cfg_of(k);
    const int A = vp_model_cfg_actions(&c);
    const int64_t B = k->B, rows = 3 * B + 17;
    const int tf32 = k->prec == VP_PREC_TF32;
    const double tol_out = tf32 ? 1e-2 : 1e-5;
    vp_model mc, mg;
    CHECK_OK(vp_model_init(&mc, g_cpu, &c, 77));
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 77));
    mc.precision = VP_PREC_FP32;
    mg.precision = k->prec;
    vp_model_acts *ac = NULL, *ag = NULL;
    CHECK_OK(vp_model_acts_init(&ac, &mc, B, k->T, 1));
    CHECK_OK(vp_model_acts_init(&ag, &mg, B, k->T, 1));
    if (!ac || !ag) return;
    // inputs on both sides; bars from 0 (clamped windows) to the last row
    twin feat, bar, port, taus, dlp, diqn;
    twin_2d(&feat, VP_F32, rows, c.n_features);
    twin_1d(&bar, VP_I32, B);
    twin_2d(&port, VP_F32, B, c.n_portfolio);
    twin_2d(&taus, VP_F32, B, k->T);
    twin_2d(&dlp, VP_F32, B * A, c.n_atoms);
    twin_2d(&diqn, VP_F32, B * k->T, A);
    twin_rand(&feat, -2, 2);
    twin_rand(&bar, 0, (float)rows);
    twin_rand(&port, -1, 1);
    twin_rand(&taus, 0.01f, 0.99f);
    twin_rand(&dlp, -1, 1);
    twin_rand(&diqn, -1, 1);
    // forward: outputs
    CHECK_OK(vp_model_forward(&mc, &mc.params, ac, &feat.h, &bar.h, &port.h, &taus.h, B));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_model_forward(&mg, &mg.params, ag, &feat.d, &bar.d, &port.d, &taus.d, B));
    CHECK_OK(vp_model_backward(&mg, &mg.params, ag, &dlp.d, &diqn.d));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "%s: forward + backward on the GPU allocated, copied or synchronised", k->name);
    vp_tensor lc = vp_model_log_probs(ac), lg = vp_model_log_probs(ag);
    compare("model log_probs", k->name, &lc, &lg, B * A * c.n_atoms, tol_out);
    vp_tensor qc = vp_model_q(ac), qg = vp_model_q(ag);
    compare("model q", k->name, &qc, &qg, B * A, tol_out);
    vp_tensor ic = vp_model_iqn(ac), ig = vp_model_iqn(ag);
    compare("model iqn", k->name, &ic, &ig, B * k->T * A, tol_out);
    // backward: every parameter gradient, both sides on the CPU's forward state
    share_forward_state(ac, ag, k->name);
    CHECK_OK(vp_model_backward(&mg, &mg.params, ag, &dlp.d, &diqn.d));
    CHECK_OK(vp_model_backward(&mc, &mc.params, ac, &dlp.h, &diqn.h));
    const int64_t R = B * vp_model_trunk_steps(&c);
    const struct {
        const char* name;
        const vp_tensor* partials; /* [B, C] per-sample terms of the CPU's batch sum */
    } batch_sums[5] = {{"mamba.A_log", &ac->p_alog}, {"mamba.D", &ac->p_d}, {"mamba.dt_bias", &ac->p_dtb},
                       {"mamba.conv.w", &ac->p_convw}, {"mamba.conv.b", &ac->p_convb}};
    for (int i = 0; i < mc.n_params; ++i) {
        const vp_param_info* p = &mc.info[i];
        vp_tensor gc = vp_model_param_view(&mc, &mc.grads, p), gg = vp_model_param_view(&mg, &mg.grads, p);
        // rows of the last reduction and, for the Mamba2 head and conv parameters, its cancellation
        int64_t n = B;
        if (strncmp(p->name, "iqn.", 4) == 0) n = B * k->T;
        if (strncmp(p->name, "trunk.", 6) == 0 || strcmp(p->name, "mamba.in_proj.w") == 0) n = R;
        double k1 = 1, k2 = 1;
        for (int j = 0; j < 5; ++j)
            if (strcmp(p->name, batch_sums[j].name) == 0) batch_kappas(batch_sums[j].partials, B, &k1, &k2);
        char what[96];
        snprintf(what, sizeof what, "grad %s", p->name);
        compare(what, k->name, &gc, &gg, p->numel, grad_tol(tf32, n, k1, k2));
    }
    // time of a forward and a backward on the GPU, piece by piece (default shapes only)
    if (B >= 8192) {
        double ff = vp_model_flops(&c, B, k->T, 0), fb = vp_model_flops(&c, B, k->T, 1) - ff;
        double t_fwd;
        TIME_MS(t_fwd, vp_model_forward(&mg, &mg.params, ag, &feat.d, &bar.d, &port.d, &taus.d, B));
        double t_bwd;
        TIME_MS(t_bwd, vp_model_backward(&mg, &mg.params, ag, &dlp.d, &diqn.d));
        printf("time %s: forward %.3f ms (%.1f TFLOP/s), backward %.3f ms (%.1f TFLOP/s)\n", k->name, t_fwd,
               ff / t_fwd / 1e9, t_bwd, fb / t_bwd / 1e9);
        double t_trunk;
        TIME_MS(t_trunk, vp_model_trunk_forward(&mg, &mg.params, ag, &feat.d, &bar.d, B));
        double t_mamba;
        TIME_MS(t_mamba, vp_model_mamba_forward(&mg, &mg.params, ag, B));
        double t_heads;
        TIME_MS(t_heads, vp_model_heads(&mg, &mg.params, ag, NULL, &port.d, NULL, B));
        double t_iqn;
        TIME_MS(t_iqn, vp_model_iqn_forward(&mg, &mg.params, ag, &taus.d, B, k->T));
        printf("time %s forward pieces: trunk %.3f, mamba %.3f, portfolio+c51 %.3f, iqn %.3f ms\n", k->name, t_trunk,
               t_mamba, t_heads, t_iqn);
        const vp_mamba_dims d = {B, c.window, c.hidden, c.mamba_state, c.hidden / c.mamba_head_dim,
                                 c.mamba_head_dim, c.mamba_conv};
        const float* P = (const float*)mg.params.data;
        const float* cw = P + vp_model_find_param(&mg, "mamba.conv.w")->offset;
        const float* cb = P + vp_model_find_param(&mg, "mamba.conv.b")->offset;
        const float* dtb = P + vp_model_find_param(&mg, "mamba.dt_bias")->offset;
        const float* al = P + vp_model_find_param(&mg, "mamba.A_log")->offset;
        const float* dd = P + vp_model_find_param(&mg, "mamba.D")->offset;
        float *xbcdt = (float*)ag->xbcdt.data, *xb = (float*)ag->xb.data, *cc = (float*)ag->c.data;
        double k_conv;
        TIME_MS(k_conv, vp_mops_cuda.conv_forward(g_gpu, &d, xbcdt, cw, cb, (float*)ag->xb_pre.data, xb,
                                                          (float*)ag->c_pre.data, cc));
        double k_scan;
        TIME_MS(k_scan, vp_mops_cuda.scan_forward(g_gpu, &d, xb, cc, xbcdt, dtb, al, dd, (float*)ag->dt.data,
                                                          (float*)ag->y.data));
        double k_scanb;
        TIME_MS(k_scanb, vp_mops_cuda.scan_backward(
            g_gpu, &d, xb, cc, xbcdt, (float*)ag->dt.data, dtb, al, dd, (float*)ag->d_y.data, (float*)ag->d_xb.data,
            (float*)ag->d_c.data, (float*)ag->d_xbcdt.data, (float*)ag->p_alog.data, (float*)ag->p_d.data,
            (float*)ag->p_dtb.data));
        double k_convb;
        TIME_MS(k_convb, vp_mops_cuda.conv_backward(
            g_gpu, &d, xbcdt, cw, (float*)ag->xb_pre.data, (float*)ag->c_pre.data, (float*)ag->d_xb.data,
            (float*)ag->d_c.data, (float*)ag->d_xbcdt.data, (float*)ag->p_convw.data, (float*)ag->p_convb.data));
        double k_mixb;
        TIME_MS(k_mixb, vp_mops_cuda.iqn_mix_backward(g_gpu, B, k->T, c.hidden, (float*)ag->h.data,
                                                              (float*)ag->phi.data, (float*)ag->d_mix.data,
                                                              (float*)ag->d_h.data, (float*)ag->d_phi.data,
                                                              (float*)ag->p_phib.data));
        printf("time %s kernels: conv fwd %.3f, scan fwd %.3f, scan bwd %.3f, conv bwd %.3f, iqn mix bwd %.3f ms\n",
               k->name, k_conv, k_scan, k_scanb, k_convb, k_mixb);
    }
    twin_free(&feat), twin_free(&bar), twin_free(&port), twin_free(&taus), twin_free(&dlp), twin_free(&diqn);
    vp_model_acts_free(ac);
    vp_model_acts_free(ag);
    vp_model_free(&mc);
    vp_model_free(&mg);
}

static void test_model_parity(void) {
    for (int i = 0; i < N_CASES; ++i) run_case(&CASES[i]);
}

/* The one-pass IQN embedding (cuda_iqn.cu) against its CPU reference (cpu_heads.c) at the
 * widths it is built for, with cosines and phi written and with mix alone (the same bits);
 * B * T = 385 leaves a partial tile of 1 row. Tolerances: cosines 1e-6 (the same cosf),
 * phi and mix 1e-2 (TF32 products, as for the network). */
static void test_iqn_embed_gpu(void) {
    const int64_t Bs[2] = {8192, 77};
    const int Ts[2] = {64, 5};
    for (int k = 0; k < 2; ++k) {
        const int64_t B = Bs[k], Q = B * Ts[k];
        const int NC = VP_IQN_EMBED_NC, H = VP_IQN_EMBED_H;
        const vp_iqn_dims d = {B, Ts[k], NC, H};
        char cas[48];
        snprintf(cas, sizeof cas, "B %lld T %d", (long long)B, Ts[k]);
        twin tau, h, pw, pb, cosf, phi, mix, mix2;
        twin_1d(&tau, VP_F32, Q), twin_2d(&h, VP_F32, B, H), twin_2d(&pw, VP_F32, H, NC), twin_1d(&pb, VP_F32, H);
        twin_2d(&cosf, VP_F32, Q, NC), twin_2d(&phi, VP_F32, Q, H), twin_2d(&mix, VP_F32, Q, H);
        twin_2d(&mix2, VP_F32, Q, H);
        twin_rand(&tau, 0.0f, 1.0f), twin_rand(&h, -1.5f, 1.5f);
        twin_rand(&pw, -0.125f, 0.125f), twin_rand(&pb, -0.125f, 0.125f);
        twin_poison(&cosf), twin_poison(&phi), twin_poison(&mix), twin_poison(&mix2);
        CHECK_OK(vp_mops_cpu.iqn_embed(g_cpu, &d, (const float*)tau.h.data, (const float*)h.h.data,
                                       (const float*)pw.h.data, (const float*)pb.h.data, (float*)cosf.h.data,
                                       (float*)phi.h.data, (float*)mix.h.data));
        CHECK_OK(vp_mops_cuda.iqn_embed(g_gpu, &d, (const float*)tau.d.data, (const float*)h.d.data,
                                        (const float*)pw.d.data, (const float*)pb.d.data, (float*)cosf.d.data,
                                        (float*)phi.d.data, (float*)mix.d.data));
        CHECK_OK(vp_mops_cuda.iqn_embed(g_gpu, &d, (const float*)tau.d.data, (const float*)h.d.data,
                                        (const float*)pw.d.data, (const float*)pb.d.data, NULL, NULL,
                                        (float*)mix2.d.data));
        CHECK_OK(vp_backend_sync(g_gpu));
        compare("iqn embed cosf", cas, &cosf.h, &cosf.d, Q * NC, 1e-6);
        compare("iqn embed phi", cas, &phi.h, &phi.d, Q * H, 1e-2);
        compare("iqn embed mix", cas, &mix.h, &mix.d, Q * H, 1e-2);
        float *a1 = (float*)twin_fetch(&mix), *a2 = (float*)twin_fetch(&mix2);
        CHECK(a1 && a2 && memcmp(a1, a2, sizeof(float) * (size_t)(Q * H)) == 0,
              "iqn embed %s: mix without cosines or phi differs", cas);
        free(a1), free(a2);
        if (B >= 8192) {
            double t_all, t_mix;
            TIME_MS(t_all, vp_mops_cuda.iqn_embed(g_gpu, &d, (const float*)tau.d.data, (const float*)h.d.data,
                                                  (const float*)pw.d.data, (const float*)pb.d.data,
                                                  (float*)cosf.d.data, (float*)phi.d.data, (float*)mix.d.data));
            TIME_MS(t_mix, vp_mops_cuda.iqn_embed(g_gpu, &d, (const float*)tau.d.data, (const float*)h.d.data,
                                                  (const float*)pw.d.data, (const float*)pb.d.data, NULL, NULL,
                                                  (float*)mix2.d.data));
            const double gb_all = 4.0 * (double)Q * (NC + 2.0 * H) / 1e9, gb_mix = 4.0 * (double)Q * H / 1e9;
            printf("time iqn embed %s: cosines + phi + mix %.3f ms (%.2f TB/s written), mix only %.3f ms (%.2f TB/s)\n",
                   cas, t_all, gb_all / t_all, t_mix, gb_mix / t_mix);
        }
        twin* all[8] = {&tau, &h, &pw, &pb, &cosf, &phi, &mix, &mix2};
        for (int i = 0; i < 8; ++i) twin_free(all[i]);
    }
}

/* The IQN output layer's input gradient kernel against the CPU's, on its fast path (A <= 16:
 * the default's 13 outputs) and its general one (A = 21), with odd M and T and a last group
 * of fewer than VP_IQN_W2_GROUP samples; FP32 sums of A terms (d_iq1, p_b) or of up to
 * VP_IQN_W2_GROUP * T terms (p_w2), so 1e-6 and 1e-5 norm-wise. The weight-gradient partials'
 * column sums are held against dzq^T iq1 summed in double on the host. */
static void test_iqn_l2_backward_gpu(void) {
    const int As[2] = {13, 21}, Ms[2] = {128, 37}, Ts[2] = {64, 7};
    const int64_t Bs[2] = {8192, 33};
    for (int k = 0; k < 2; ++k) {
        const int64_t B = Bs[k], Q = B * Ts[k], G = (B + VP_IQN_W2_GROUP - 1) / VP_IQN_W2_GROUP;
        const int A = As[k], M = Ms[k];
        char cas[48];
        snprintf(cas, sizeof cas, "B %lld T %d M %d A %d", (long long)B, Ts[k], M, A);
        twin iq1, dzq, w2, d_iq1, pb, pw;
        twin_2d(&iq1, VP_F32, Q, M), twin_2d(&dzq, VP_F32, Q, A), twin_2d(&w2, VP_F32, A, M);
        twin_2d(&d_iq1, VP_F32, Q, M), twin_2d(&pb, VP_F32, B, M), twin_2d(&pw, VP_F32, G, (int64_t)A * M);
        twin_rand(&iq1, -1.0f, 1.0f), twin_rand(&dzq, -1.0f, 1.0f), twin_rand(&w2, -0.3f, 0.3f);
        twin_poison(&d_iq1), twin_poison(&pb), twin_poison(&pw);
        CHECK_OK(vp_mops_cpu.iqn_l2_backward(g_cpu, B, Ts[k], M, A, (const float*)iq1.h.data, (const float*)dzq.h.data,
                                             (const float*)w2.h.data, (float*)d_iq1.h.data, (float*)pb.h.data,
                                             (float*)pw.h.data));
        CHECK_OK(vp_mops_cuda.iqn_l2_backward(g_gpu, B, Ts[k], M, A, (const float*)iq1.d.data,
                                              (const float*)dzq.d.data, (const float*)w2.d.data,
                                              (float*)d_iq1.d.data, (float*)pb.d.data, (float*)pw.d.data));
        CHECK_OK(vp_backend_sync(g_gpu));
        compare("iqn l2_backward d_iq1", cas, &d_iq1.h, &d_iq1.d, Q * M, 1e-6);
        compare("iqn l2_backward p_b", cas, &pb.h, &pb.d, B * M, 1e-6);
        compare("iqn l2_backward p_w2", cas, &pw.h, &pw.d, G * A * M, 1e-5);
        // the partials' column sums against dzq^T iq1 in double
        const float *x = (const float*)iq1.h.data, *dz = (const float*)dzq.h.data, *ph = (const float*)pw.h.data;
        double worst = 0.0;
        for (int a = 0; a < A; ++a)
            for (int m = 0; m < M; ++m) {
                double want = 0.0, mass = 0.0, got = 0.0;
                for (int64_t r = 0; r < Q; ++r) {
                    want += (double)dz[r * A + a] * x[r * M + m];
                    mass += fabs((double)dz[r * A + a] * x[r * M + m]);
                }
                for (int64_t g = 0; g < G; ++g) got += ph[g * A * M + (int64_t)a * M + m];
                // FP32 sums of up to VP_IQN_W2_GROUP * T terms: well inside 1e-5 of their mass
                worst = fmax(worst, fabs(got - want) / fmax(mass, 1e-30));
            }
        CHECK(worst <= 1e-5, "%s: p_w2 column sums off dzq^T iq1 by %.3e of the terms' mass", cas, worst);
        twin_free(&iq1), twin_free(&dzq), twin_free(&w2), twin_free(&d_iq1), twin_free(&pb), twin_free(&pw);
    }
}

/* A = -1, dt = 0.5, B = C = 1, D = 0, u = [1, 0, 0]: y = [0.5, 0.303265, 0.183940]. */
static void test_scan_oracle_gpu(void) {
    const double want[3] = {0.5, 0.303265, 0.183940};
    for (int K = 1; K <= 3; ++K) {
        twin xb, c, xbcdt, zero, dt, y;
        twin_1d(&xb, VP_F32, 2 * K);
        twin_1d(&c, VP_F32, 1);
        twin_1d(&xbcdt, VP_F32, 4 * K);
        twin_1d(&zero, VP_F32, 1);
        twin_1d(&dt, VP_F32, K);
        twin_1d(&y, VP_F32, 1);
        for (int t = 0; t < K; ++t) {
            ((float*)xb.h.data)[2 * t] = t == 0 ? 1.0f : 0.0f;
            ((float*)xb.h.data)[2 * t + 1] = 1.0f;
            ((float*)xbcdt.h.data)[4 * t + 3] = (float)log(exp(0.5) - 1.0);
        }
        ((float*)c.h.data)[0] = 1.0f;
        twin_push(&xb), twin_push(&c), twin_push(&xbcdt), twin_push(&zero);
        vp_mamba_dims d = {1, K, 1, 1, 1, 1, 4};
        CHECK_OK(vp_mops_cuda.scan_forward(g_gpu, &d, (const float*)xb.d.data, (const float*)c.d.data,
                                           (const float*)xbcdt.d.data, (const float*)zero.d.data,
                                           (const float*)zero.d.data, (const float*)zero.d.data, (float*)dt.d.data,
                                           (float*)y.d.data));
        float got = 0.0f;
        CHECK_OK(vp_download(g_gpu, &got, &y.d, sizeof got));
        twin_row("scan oracle", K == 1 ? "K=1" : K == 2 ? "K=2" : "K=3", fabs(got - want[K - 1]), 1e-6,
                 fabs(got - want[K - 1]) <= 1e-6);
        CHECK_NEAR(got, want[K - 1], 1e-6, 0);
        twin_free(&xb), twin_free(&c), twin_free(&xbcdt), twin_free(&zero), twin_free(&dt), twin_free(&y);
    }
}

/* Held parameters (vp_model_acts_hold_params) on forward-only activations with padded heads
 * (Z 11, A Z 77: rows padded to 12 and 80): a held forward gives Q bit for bit as the first;
 * after an advantage bias is changed in place a held forward still gives the old Q (the padded
 * copy was not made again, which is what holding promises may happen), and once let go the
 * next forward gives the Q of a fresh set of activations with the new bias. */
static void test_params_held_gpu(void) {
    const model_case* k = &CASES[2];
    const vp_model_cfg c = cfg_of(k);
    const int A = vp_model_cfg_actions(&c);
    const int64_t B = 40, rows = 3 * B + 17;
    vp_model mg;
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 77));
    mg.precision = VP_PREC_FP32;
    vp_model_acts *ag = NULL, *fresh = NULL;
    CHECK_OK(vp_model_acts_init(&ag, &mg, B, 0, 0));
    CHECK_OK(vp_model_acts_init(&fresh, &mg, B, 0, 0));
    if (!ag || !fresh) return;
    CHECK(ag->pad_heads, "params held: Z %d should give padded heads on CUDA", c.n_atoms);
    twin feat, bar, port, q;
    twin_2d(&feat, VP_F32, rows, c.n_features);
    twin_1d(&bar, VP_I32, B);
    twin_2d(&port, VP_F32, B, c.n_portfolio);
    twin_2d(&q, VP_F32, B, A);
    twin_rand(&feat, -2, 2);
    twin_rand(&bar, 0, (float)rows);
    twin_rand(&port, -1, 1);
    const size_t qb = (size_t)B * A * sizeof(float);
    float *q1 = malloc(qb), *q2 = malloc(qb), *q3 = malloc(qb), *q4 = malloc(qb), *q5 = malloc(qb);
    if (!q1 || !q2 || !q3 || !q4 || !q5) return;
#define HELD_Q(acts, dst)                                                                          \
    do {                                                                                           \
        CHECK_OK(vp_model_encode(&mg, &mg.params, acts, &feat.d, &bar.d, B));                      \
        CHECK_OK(vp_model_heads(&mg, &mg.params, acts, NULL, &port.d, NULL, B));                   \
        vp_tensor qt = vp_model_q(acts);                                                           \
        CHECK_OK(vp_download(g_gpu, dst, &qt, qb));                                                \
    } while (0)
    HELD_Q(ag, q1);
    vp_model_acts_hold_params(ag, 1);
    HELD_Q(ag, q2);
    CHECK(memcmp(q1, q2, qb) == 0, "params held: a held forward changed Q");
    // one advantage bias up by 1 (action 0's first atom): Q of action 0 moves in a fresh forward
    vp_tensor a2b = vp_model_slot(&mg, &mg.params, VP_PS_C51_A2_B);
    float b0 = 0.0f;
    CHECK_OK(vp_download(g_gpu, &b0, &a2b, sizeof b0));
    b0 += 1.0f;
    CHECK_OK(vp_upload(g_gpu, &a2b, &b0, sizeof b0));
    HELD_Q(ag, q3);
    CHECK(memcmp(q1, q3, qb) == 0, "params held: the held forward made the padded copy again");
    vp_model_acts_hold_params(ag, 0);
    HELD_Q(ag, q4);
    HELD_Q(fresh, q5);
    CHECK(memcmp(q4, q5, qb) == 0, "params held: after letting go, Q differs from a fresh forward's");
    CHECK(memcmp(q4, q1, qb) != 0, "params held: the changed bias did not reach Q after letting go");
#undef HELD_Q
    free(q1), free(q2), free(q3), free(q4), free(q5);
    twin_free(&feat), twin_free(&bar), twin_free(&port), twin_free(&q);
    vp_model_acts_free(ag), vp_model_acts_free(fresh);
    vp_model_free(&mg);
}

int main(void) {
    gpu_setup("test_gpu_model");
    RUN_TEST(test_scan_oracle_gpu);
    RUN_TEST(test_iqn_embed_gpu);
    RUN_TEST(test_iqn_l2_backward_gpu);
    RUN_TEST(test_model_parity);
    RUN_TEST(test_params_held_gpu);
    gpu_teardown();
    return vpt_finish();
}
