/* Scaled dot-product attention on the CPU, forward and backward: plain loops over
 * (sequence, head, query), logits, softmax sums and every dot product in double. The
 * softmax subtracts the row's maximum logit first, so large logits do not overflow. A row
 * is never fully masked: the causal mask keeps key 0 for every query (and key i for query
 * i), so every softmax sum is >= 1 after the shift. */
#include <math.h>

#include "cpu_impl.h"

/* Where one (sequence, head) block lives in the row-major tensors: row r of q (or k, v,
 * out) for sequence s and head h starts at ((s * L + r) * NH + h) * D. */
typedef struct attn_view {
    int64_t row;   /* NH * D: elements between consecutive positions */
    int64_t q0;    /* offset of (s, position 0, head h) in q, out, dout, dq */
    int64_t k0;    /* offset of (s, position 0, head h) in k, v, dk, dv */
    int64_t lse0;  /* offset of (s, h, query 0) in lse */
} attn_view;

static attn_view attn_view_of(const vp_attn_desc* d, int64_t s, int h) {
    attn_view w;
    w.row = (int64_t)d->heads * d->dim;
    w.q0 = s * d->lq * w.row + (int64_t)h * d->dim;
    w.k0 = s * d->lk * w.row + (int64_t)h * d->dim;
    w.lse0 = (s * d->heads + h) * d->lq;
    return w;
}

/* Keys query i sees: all Lk, or 0..i under the causal mask. */
static int attn_keys(const vp_attn_desc* d, int i) { return d->causal ? i + 1 : d->lk; }

/* sum_c a[c] * b[c] over D elements, in double. */
static double dot_d(const float* a, const float* b, int dim) {
    double s = 0.0;
    for (int c = 0; c < dim; ++c) s += (double)a[c] * (double)b[c];
    return s;
}

vp_status vp_cpu_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                           const vp_tensor* v, vp_tensor* out, vp_tensor* lse) {
    (void)b;
    const float *Q = (const float*)q->data, *K = (const float*)k->data, *V = (const float*)v->data;
    float *O = (float*)out->data, *LSE = (float*)lse->data;
    const int D = d->dim;
    double s[VP_ATTN_MAX_LEN];   /* [Lk] scaled logits, then exp(logit - max) */
    double acc[VP_ATTN_MAX_DIM]; /* [D] sum_j p_j v_j */
    for (int64_t sq = 0; sq < d->batch; ++sq)
        for (int h = 0; h < d->heads; ++h) {
            const attn_view w = attn_view_of(d, sq, h);
            for (int i = 0; i < d->lq; ++i) {
                const float* qi = Q + w.q0 + i * w.row; /* [D] */
                const int nk = attn_keys(d, i);
                /* logits and their maximum */
                double mx = -INFINITY;
                for (int j = 0; j < nk; ++j) {
                    s[j] = (double)d->scale * dot_d(qi, K + w.k0 + j * w.row, D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                /* shifted exponentials, their sum and the weighted sum of values */
                double sum = 0.0;
                for (int c = 0; c < D; ++c) acc[c] = 0.0;
                for (int j = 0; j < nk; ++j) {
                    const double p = exp(s[j] - mx);
                    const float* vj = V + w.k0 + j * w.row;
                    sum += p;
                    for (int c = 0; c < D; ++c) acc[c] += p * (double)vj[c];
                }
                float* oi = O + w.q0 + i * w.row;
                for (int c = 0; c < D; ++c) oi[c] = (float)(acc[c] / sum);
                LSE[w.lse0 + i] = (float)(mx + log(sum));
            }
        }
    return VP_OK;
}

/* P[i, j] = exp(scale q_i . k_j - lse_i) recomputed from the forward's lse, and
 * dS[i, j] = P (dout_i . v_j - delta_i); p_out receives P. */
static double attn_ds(const vp_attn_desc* d, const float* qi, const float* kj, const float* vj, const float* gi,
                      double lse_i, double delta_i, double* p_out) {
    const double p = exp((double)d->scale * dot_d(qi, kj, d->dim) - lse_i);
    *p_out = p;
    return p * (dot_d(gi, vj, d->dim) - delta_i);
}

vp_status vp_cpu_attention_backward(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                                    const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse,
                                    const vp_tensor* dout, vp_tensor* dq, vp_tensor* dk, vp_tensor* dv) {
    (void)b;
    const float *Q = (const float*)q->data, *K = (const float*)k->data, *V = (const float*)v->data;
    const float *O = (const float*)out->data, *LSE = (const float*)lse->data, *G = (const float*)dout->data;
    float *DQ = (float*)dq->data, *DK = (float*)dk->data, *DV = (float*)dv->data;
    const int D = d->dim;
    const double scale = (double)d->scale;
    double delta[VP_ATTN_MAX_LEN];                       /* [Lq] rowsum(dout * out) */
    double acc[VP_ATTN_MAX_DIM], acc2[VP_ATTN_MAX_DIM]; /* [D] gradient rows */
    for (int64_t sq = 0; sq < d->batch; ++sq)
        for (int h = 0; h < d->heads; ++h) {
            const attn_view w = attn_view_of(d, sq, h);
            /* delta_i = dout_i . out_i (= sum_j P_ij dP_ij) */
            for (int i = 0; i < d->lq; ++i) delta[i] = dot_d(G + w.q0 + i * w.row, O + w.q0 + i * w.row, D);
            /* dq_i = scale sum_j dS_ij k_j */
            for (int i = 0; i < d->lq; ++i) {
                const float *qi = Q + w.q0 + i * w.row, *gi = G + w.q0 + i * w.row;
                const int nk = attn_keys(d, i);
                for (int c = 0; c < D; ++c) acc[c] = 0.0;
                for (int j = 0; j < nk; ++j) {
                    const float *kj = K + w.k0 + j * w.row, *vj = V + w.k0 + j * w.row;
                    double p;
                    const double ds = attn_ds(d, qi, kj, vj, gi, (double)LSE[w.lse0 + i], delta[i], &p);
                    for (int c = 0; c < D; ++c) acc[c] += ds * (double)kj[c];
                }
                float* dqi = DQ + w.q0 + i * w.row;
                for (int c = 0; c < D; ++c) dqi[c] = (float)(scale * acc[c]);
            }
            /* dk_j = scale sum_i dS_ij q_i and dv_j = sum_i P_ij dout_i over the queries that see j */
            for (int j = 0; j < d->lk; ++j) {
                const float *kj = K + w.k0 + j * w.row, *vj = V + w.k0 + j * w.row;
                for (int c = 0; c < D; ++c) acc[c] = acc2[c] = 0.0;
                for (int i = d->causal ? j : 0; i < d->lq; ++i) {
                    const float *qi = Q + w.q0 + i * w.row, *gi = G + w.q0 + i * w.row;
                    double p;
                    const double ds = attn_ds(d, qi, kj, vj, gi, (double)LSE[w.lse0 + i], delta[i], &p);
                    for (int c = 0; c < D; ++c) {
                        acc[c] += ds * (double)qi[c];
                        acc2[c] += p * (double)gi[c];
                    }
                }
                float *dkj = DK + w.k0 + j * w.row, *dvj = DV + w.k0 + j * w.row;
                for (int c = 0; c < D; ++c) {
                    dkj[c] = (float)(scale * acc[c]);
                    dvj[c] = (float)acc2[c];
                }
            }
        }
    return VP_OK;
}
