/* The TLOB encoder in double (docs/model.md, "TLOB encoder"), for the tests: the trunk rows
 * h2 [B, K, H] plus tlob.pos, tlob_blocks blocks of a temporal sublayer (K tokens of width H)
 * and a feature sublayer (H tokens of width K, the window transposed), each attention +
 * residual + LayerNorm + GELU MLP + residual + LayerNorm; e [B, H] = the last step's row.
 * Included by model_ref.h, whose layers it uses. */
#ifndef VULPES_TESTS_TLOB_REF_H
#define VULPES_TESTS_TLOB_REF_H

/* One sublayer over x [B, L, W] in place (block blk of the side named nm, NH heads). */
static inline void ref_tlob_side(const vp_model* m, const double* p, const char* nm, int blk, int NH, int64_t B,
                                 int L, int W, double* x) {
    const vp_model_cfg* c = &m->cfg;
    const int TM = c->tlob_mlp, D = W / NH;
    const int64_t n = B * L;
    char name[64];
#define TLP(suffix) (snprintf(name, sizeof name, "%s.%s", nm, suffix), ref_param(m, p, name))
    const double *qkvw = TLP("qkv.w") + (int64_t)blk * 3 * W * W, *qkvb = TLP("qkv.b") + (int64_t)blk * 3 * W;
    const double *ow = TLP("o.w") + (int64_t)blk * W * W, *ob = TLP("o.b") + (int64_t)blk * W;
    const double *g1 = TLP("ln1.g") + (int64_t)blk * W, *b1 = TLP("ln1.b") + (int64_t)blk * W;
    const double *w1 = TLP("fc1.w") + (int64_t)blk * TM * W * W, *c1 = TLP("fc1.b") + (int64_t)blk * TM * W;
    const double *w2 = TLP("fc2.w") + (int64_t)blk * TM * W * W, *c2 = TLP("fc2.b") + (int64_t)blk * W;
    const double *g2 = TLP("ln2.g") + (int64_t)blk * W, *b2 = TLP("ln2.b") + (int64_t)blk * W;
#undef TLP
    double* qkv = ref_alloc(n * 3 * W);
    double* o = ref_alloc(n * W);
    double* a = ref_alloc(n * W);
    double* u = ref_alloc(n * TM * W);
    double* s = ref_alloc(L);
    // q, k, v (one product with the stacked rows), then softmax(q k^T / sqrt(D)) v per head
    ref_linear(x, n, W, qkvw, qkvb, 3 * W, qkv);
    for (int64_t b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < L; ++i) {
                const double* q = qkv + (b * L + i) * 3 * W + h * D;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < L; ++j) {
                    const double* k = qkv + (b * L + j) * 3 * W + W + h * D;
                    double dot = 0;
                    for (int t = 0; t < D; ++t) dot += q[t] * k[t];
                    s[j] = dot / sqrt((double)D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < L; ++j) sum += (s[j] = exp(s[j] - mx));
                for (int t = 0; t < D; ++t) {
                    double acc = 0;
                    for (int j = 0; j < L; ++j) acc += s[j] / sum * qkv[(b * L + j) * 3 * W + 2 * W + h * D + t];
                    o[(b * L + i) * W + h * D + t] = acc;
                }
            }
    // a = LN(x + o Wo^T + bo); x = LN(a + fc2(gelu(fc1 a)))
    ref_linear(o, n, W, ow, ob, W, a);
    for (int64_t i = 0; i < n * W; ++i) a[i] += x[i];
    ref_layernorm(a, n, W, g1, b1, c->ln_eps);
    ref_linear(a, n, W, w1, c1, TM * W, u);
    for (int64_t i = 0; i < n * TM * W; ++i) u[i] = 0.5 * u[i] * erfc(-u[i] / sqrt(2.0));
    ref_linear(u, n, TM * W, w2, c2, W, x);
    for (int64_t i = 0; i < n * W; ++i) x[i] += a[i];
    ref_layernorm(x, n, W, g2, b2, c->ln_eps);
    free(qkv);
    free(o);
    free(a);
    free(u);
    free(s);
}

/* e [B, H] of the TLOB encoder over the trunk rows h2 [B K, H]. */
static inline void ref_tlob(const vp_model* m, const double* p, const double* h2, int64_t B, double* e) {
    const vp_model_cfg* c = &m->cfg;
    const int K = c->window, H = c->hidden;
    double* x = ref_alloc(B * K * H);
    double* t = ref_alloc(B * K * H);
    const double* pos = ref_param(m, p, "tlob.pos");
    for (int64_t i = 0; i < B * K * H; ++i) x[i] = h2[i] + pos[i % ((int64_t)K * H)];
    for (int blk = 0; blk < c->tlob_blocks; ++blk) {
        ref_tlob_side(m, p, "tlob.t", blk, c->tlob_heads, B, K, H, x);
        for (int64_t b = 0; b < B; ++b)
            for (int k = 0; k < K; ++k)
                for (int j = 0; j < H; ++j) t[(b * H + j) * K + k] = x[(b * K + k) * H + j];
        ref_tlob_side(m, p, "tlob.f", blk, c->tlob_feature_heads, B, H, K, t);
        for (int64_t b = 0; b < B; ++b)
            for (int k = 0; k < K; ++k)
                for (int j = 0; j < H; ++j) x[(b * K + k) * H + j] = t[(b * H + j) * K + k];
    }
    for (int64_t b = 0; b < B; ++b) memcpy(e + b * H, x + (b * K + K - 1) * H, sizeof(double) * (size_t)H);
    free(x);
    free(t);
}

#endif /* VULPES_TESTS_TLOB_REF_H */
