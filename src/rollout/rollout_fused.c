/* Host side of the fused CUDA path: the per-bar constants of the heads folded on the host
 * (W1 Wp and W1 bp + b1, in double) and a host reference of the kernel's heads math (both
 * on any backend, for tests); on CUDA the encodings turned chunk by chunk into the first
 * layers' market terms u = W1 e (value and advantage streams), then one launch of the fused
 * kernel over all windows (the rollout table's fused kernel: CUDA only, the CPU's fails and
 * its fused_supported says 0, so vp_ro_fused_fits keeps the CPU on the op path). */
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"
#include "vulpes/ops.h"
#include "vulpes/run.h"

/* Downloads parameter `name` of m from params into host memory dst. */
static vp_status fetch(const vp_model* m, const vp_tensor* params, const char* name, float* dst) {
    const vp_param_info* p = vp_model_find_param(m, name);
    VP_REQUIRE(p != NULL, VP_ERR_STATE, "vp_backtest_run: the model has no parameter %s", name);
    vp_tensor v = vp_model_param_view(m, params, p);
    return vp_download(m->backend, dst, &v, sizeof(float) * (size_t)p->numel);
}

vp_status vp_ro_fold_heads(const vp_model* m, const vp_tensor* params, float* out) {
    const int H = m->cfg.hidden, HH = m->cfg.head_hidden, P = VP_ENV_PORTFOLIO;
    const size_t nw = (size_t)H * (P + 1) + 2 * (size_t)HH * (H + 1);
    float* h = (float*)malloc(sizeof(float) * nw);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "vp_backtest_run: host copy of the head weights");
    float *hpw = h, *hpb = hpw + (size_t)H * P, *hw1 = hpb + H, *hb1 = hw1 + 2 * (size_t)HH * H;
    vp_status s = fetch(m, params, "port.w", hpw);
    if (s == VP_OK) s = fetch(m, params, "port.b", hpb);
    if (s == VP_OK) s = fetch(m, params, "c51.v1.w", hw1);
    if (s == VP_OK) s = fetch(m, params, "c51.a1.w", hw1 + (size_t)HH * H);
    if (s == VP_OK) s = fetch(m, params, "c51.v1.b", hb1);
    if (s == VP_OK) s = fetch(m, params, "c51.a1.b", hb1 + HH);
    // out = [M_v (HH x 8), M_a (HH x 8), c_v (HH), c_a (HH)], folded in double
    for (int k = 0; s == VP_OK && k < 2; ++k)
        for (int j = 0; j < HH; ++j) {
            const float* wrow = hw1 + ((size_t)k * HH + j) * H;
            double cacc = hb1[k * HH + j];
            for (int q = 0; q < P; ++q) {
                double acc = 0.0;
                for (int i = 0; i < H; ++i) acc += (double)wrow[i] * hpw[(size_t)i * P + q];
                out[((size_t)k * HH + j) * P + q] = (float)acc;
            }
            for (int i = 0; i < H; ++i) cacc += (double)wrow[i] * hpb[i];
            out[2 * (size_t)HH * P + (size_t)k * HH + j] = (float)cacc;
        }
    free(h);
    return s;
}

vp_status vp_ro_fused_reference(const vp_model* m, const vp_tensor* params, const float* e, const float* p,
                                float* q) {
    const int H = m->cfg.hidden, HH = m->cfg.head_hidden, Z = m->cfg.n_atoms, A = vp_model_cfg_actions(&m->cfg);
    const int P = VP_ENV_PORTFOLIO;
    const size_t n = 2 * (size_t)HH * (P + 1) + 2 * (size_t)HH * H + (size_t)(Z + A * Z) * (HH + 1) + 2 * HH +
                     (size_t)(Z + A * Z);
    float* buf = (float*)malloc(sizeof(float) * n);
    VP_REQUIRE(buf != NULL, VP_ERR_OOM, "vp_ro_fused_reference: host memory");
    float *folded = buf, *w1 = folded + 2 * HH * (P + 1), *w2 = w1 + 2 * (size_t)HH * H;
    float *b2 = w2 + (size_t)(Z + A * Z) * HH, *hid = b2 + Z + A * Z, *out = hid + 2 * HH;
    vp_status s = vp_ro_fold_heads(m, params, folded);
    if (s == VP_OK) s = fetch(m, params, "c51.v1.w", w1);
    if (s == VP_OK) s = fetch(m, params, "c51.a1.w", w1 + (size_t)HH * H);
    if (s == VP_OK) s = fetch(m, params, "c51.v2.w", w2);
    if (s == VP_OK) s = fetch(m, params, "c51.a2.w", w2 + (size_t)Z * HH);
    if (s == VP_OK) s = fetch(m, params, "c51.v2.b", b2);
    if (s == VP_OK) s = fetch(m, params, "c51.a2.b", b2 + Z);
    if (s == VP_OK) {
        // hidden units: relu(W1 e + c + M p) of both streams
        for (int j = 0; j < 2 * HH; ++j) {
            float acc = 0.0f;
            for (int i = 0; i < H; ++i) acc += w1[(size_t)j * H + i] * e[i];
            acc += folded[2 * HH * P + j];
            for (int k = 0; k < P; ++k) acc += folded[(size_t)j * P + k] * p[k];
            hid[j] = acc > 0.0f ? acc : 0.0f;
        }
        // second layers: V's Z rows on v1, the A Z advantage rows on ah
        for (int r = 0; r < Z + A * Z; ++r) {
            const float* x = hid + (r < Z ? 0 : HH);
            float acc = 0.0f;
            for (int c = 0; c < HH; ++c) acc += w2[(size_t)r * HH + c] * x[c];
            out[r] = acc + b2[r];
        }
        // per branch: dueling logits, softmax over atoms, Q = sum z p
        const float dz = (m->cfg.v_max - m->cfg.v_min) / (float)(Z - 1);
        for (int br = 0, a0 = 0; br < m->cfg.n_branches; a0 += m->cfg.branch_sizes[br++]) {
            const int S = m->cfg.branch_sizes[br];
            const float *val = out, *adv = out + Z + (size_t)a0 * Z;
            for (int j = 0; j < S; ++j) {
                float mx = -INFINITY, se = 0.0f, sq = 0.0f, l[4096];
                for (int zz = 0; zz < Z; ++zz) {
                    float mean = 0.0f;
                    for (int a = 0; a < S; ++a) mean += adv[a * Z + zz];
                    l[zz] = val[zz] + adv[j * Z + zz] - mean / (float)S;
                    mx = l[zz] > mx ? l[zz] : mx;
                }
                for (int zz = 0; zz < Z; ++zz) {
                    const float ez = expf(l[zz] - mx);
                    se += ez;
                    sq += (m->cfg.v_min + (float)zz * dz) * ez;
                }
                q[a0 + j] = sq / se;
            }
        }
    }
    free(buf);
    return s;
}

/* A parameter's view by name (the model's table), into *out. */
static vp_status param(const vp_ro_run* r, const char* name, vp_tensor* out) {
    const vp_param_info* p = vp_model_find_param(r->m, name);
    VP_REQUIRE(p != NULL, VP_ERR_STATE, "vp_backtest_run: the model has no parameter %s", name);
    *out = vp_model_param_view(r->m, r->params, p);
    return VP_OK;
}

int vp_ro_fused_fits(const vp_ro_run* r) {
    const vp_ro_kernels* k = NULL;
    if (!r->m || vp_ro_kernels_of(r->b, &k) != VP_OK) return 0;
    const vp_model_cfg* c = &r->m->cfg;
    if (2 * c->head_hidden > 1024 || c->n_atoms < 2) return 0;
    // the fused kernel computes the plain heads: the head modules that change them take the op path
    if (c->q_denoise || c->cross_branch || c->risk_budget > 0.0f || c->adaptive_atoms) return 0;
    // a goal-conditioned network (her.enabled) scores through its policy, which appends the goal
    if (c->n_portfolio != VP_ENV_PORTFOLIO) return 0;
    return k->fused_supported(r->b, &r->dims, c->head_hidden, c->n_atoms);
}

/* u_v = e W_v1^T and u_a = e W_a1^T [n_rows, HH] for every decision bar, chunk by chunk. */
static vp_status encode_terms(const vp_ro_run* r, float* u_v, float* u_a) {
    const int64_t n = r->n_steps, chunk = r->cfg->encode_chunk < n ? r->cfg->encode_chunk : n;
    const int64_t H = r->m->cfg.hidden, HH = r->m->cfg.head_hidden;
    vp_tensor wv, wa;
    VP_TRY(param(r, "c51.v1.w", &wv));
    VP_TRY(param(r, "c51.a1.w", &wa));
    vp_model_acts* acts = NULL;
    vp_buffer ibuf;
    memset(&ibuf, 0, sizeof ibuf);
    int32_t* idx = (int32_t*)malloc(sizeof(int32_t) * (size_t)chunk);
    vp_status s = idx ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_backtest_run: %lld bar indices", (long long)chunk);
    if (s == VP_OK) s = vp_model_acts_init(&acts, r->m, chunk, 0, 0);
    if (s == VP_OK) s = vp_buffer_alloc(r->b, VP_MEM_DEVICE, sizeof(int32_t) * (size_t)chunk, &ibuf);
    for (int64_t r0 = 0; s == VP_OK && r0 < n; r0 += chunk) {
        // the chunk's encodings, then both streams' market terms
        const int64_t nb = n - r0 < chunk ? n - r0 : chunk;
        for (int64_t j = 0; j < nb; ++j) idx[j] = (int32_t)(r->a + r0 + j);
        vp_tensor it = vp_tensor_1d(ibuf.dev, VP_I32, VP_MEM_DEVICE, nb);
        s = vp_upload(r->b, &it, idx, sizeof(int32_t) * (size_t)nb);
        if (s == VP_OK) s = vp_model_encode(r->m, r->params, acts, r->data->features, &it, nb);
        vp_tensor e = vp_model_encoding(acts);
        vp_tensor x = vp_tensor_2d(e.data, VP_F32, e.mem, nb, H);
        vp_gemm_desc g = vp_gemm_plain(0, 1, nb, HH, H);
        g.precision = r->pol->fp32_scores ? VP_PREC_FP32 : r->m->precision; /* the heads' first layers */
        vp_tensor yv = vp_tensor_2d(u_v + r0 * HH, VP_F32, VP_MEM_DEVICE, nb, HH);
        vp_tensor ya = vp_tensor_2d(u_a + r0 * HH, VP_F32, VP_MEM_DEVICE, nb, HH);
        if (s == VP_OK) s = vp_gemm(r->b, &g, &x, &wv, NULL, &yv);
        if (s == VP_OK) s = vp_gemm(r->b, &g, &x, &wa, NULL, &ya);
        // wait before the index buffer is refilled
        if (s == VP_OK) s = vp_backend_sync(r->b);
    }
    if (ibuf.dev) vp_buffer_free(r->b, &ibuf);
    vp_model_acts_free(acts);
    free(idx);
    return s;
}

vp_status vp_ro_run_fused(vp_ro_run* r, double* encode_s, double* sequential_s) {
    const vp_ro_kernels* k = NULL;
    VP_TRY(vp_ro_kernels_of(r->b, &k));
    const vp_model_cfg* c = &r->m->cfg;
    const int64_t HH = c->head_hidden, P = VP_ENV_PORTFOLIO, n = r->n_steps;
    const size_t u_bytes = ((size_t)(n * HH) * 4 + 255) / 256 * 256, c_bytes = (size_t)(2 * HH * (P + 1)) * 4;
    vp_buffer buf;
    memset(&buf, 0, sizeof buf);
    double t0 = vp_clock_s();
    VP_TRY(vp_buffer_alloc(r->b, VP_MEM_DEVICE, 2 * u_bytes + c_bytes, &buf));
    float *u_v = (float*)buf.dev, *u_a = (float*)((char*)buf.dev + u_bytes);
    float* consts = (float*)((char*)buf.dev + 2 * u_bytes);

    // Encodings into first-layer terms, the folded constants, the weights' views.
    vp_ro_fused_weights fw;
    memset(&fw, 0, sizeof fw);
    vp_tensor v2w, v2b, a2w, a2b;
    vp_status s = encode_terms(r, u_v, u_a);
    float* folded = (float*)malloc(c_bytes);
    if (s == VP_OK) s = folded ? vp_ro_fold_heads(r->m, r->params, folded)
                               : vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_backtest_run: folded head terms");
    vp_tensor ct = vp_tensor_1d(consts, VP_F32, VP_MEM_DEVICE, (int64_t)(c_bytes / 4));
    if (s == VP_OK) s = vp_upload(r->b, &ct, folded, c_bytes);
    free(folded);
    if (s == VP_OK) s = param(r, "c51.v2.w", &v2w);
    if (s == VP_OK) s = param(r, "c51.v2.b", &v2b);
    if (s == VP_OK) s = param(r, "c51.a2.w", &a2w);
    if (s == VP_OK) s = param(r, "c51.a2.b", &a2b);
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t1 = vp_clock_s();
    fw.hh = (int)HH;
    fw.z = c->n_atoms;
    fw.v_min = c->v_min;
    fw.v_max = c->v_max;
    fw.mv = consts;
    fw.ma = consts + HH * P;
    fw.cv = consts + 2 * HH * P;
    fw.ca = fw.cv + HH;
    fw.w_v2 = (const float*)v2w.data;
    fw.b_v2 = (const float*)v2b.data;
    fw.w_a2 = (const float*)a2w.data;
    fw.b_a2 = (const float*)a2b.data;
    fw.u_v = u_v;
    fw.u_a = u_a;

    // Every window's steps in one launch.
    if (s == VP_OK)
        s = k->fused(r->b, &r->dims, &fw, r->market.bars, &r->state, &r->win, &r->rec);
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t2 = vp_clock_s();
    vp_buffer_free(r->b, &buf);
    *encode_s = t1 - t0;
    *sequential_s = t2 - t1;
    return s;
}
