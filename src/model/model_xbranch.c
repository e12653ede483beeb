/* Cross-branch message passing between the action branches (direction, size, take-profit,
 * stop-loss), applied to the branch representations before the advantage outputs:
 *   S_k  = relu(ah E_k^T)                       each branch's state from the advantage hidden ah,
 *   S'_k = S_k + sum_j S_j W_jk^T               one message along every directed edge j -> k
 *                                               (j != k) and a self-loop j = k,
 *   adv_k = S'_k A2_k^T + b2_k                  the branch's rows of the advantage output layer.
 * E_k start at the identity plus U(-0.01, 0.01), W_jk at U(-0.01, 0.01): near the identity, so
 * switching the module on starts near the network without it (S'_k ~ ah). E is stored
 * [nb * HH, HH] (block k), W [nb * nb * HH, HH] (block j nb + k: [destination, source]).
 * States live branch-major, [nb, B, HH], so each product over the branches is one
 * strided-batched GEMM. Written with the ops plus one layout kernel (hmops.h). */
#include "model/hmops.h"
#include "model/model_internal.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

/* A GEMM of `batch` [m, n] products with strides (elements), beta and the model's precision. */
static vp_status bgemm(const vp_model* m, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t batch,
                       int64_t sa, int64_t sb, int64_t sc, float beta, const vp_tensor* A, const vp_tensor* Bm,
                       const vp_tensor* bias, vp_tensor* C) {
    vp_gemm_desc d = vp_gemm_plain(ta, tb, M, N, K);
    d.batch = batch;
    d.stride_a = sa;
    d.stride_b = sb;
    d.stride_c = sc;
    d.beta = beta;
    d.epilogue = bias ? VP_EPI_BIAS : VP_EPI_NONE;
    d.precision = m->precision;
    return vp_gemm(m->backend, &d, A, Bm, bias, C);
}

/* rows [r0, r0 + n) of a [*, cols] float buffer as a [n, cols] tensor. */
static vp_tensor rows_of(const vp_tensor* t, int64_t r0, int64_t n, int64_t cols) {
    return vp_tensor_2d((float*)t->data + r0 * cols, VP_F32, t->mem, n, cols);
}

vp_status vp_model_xb_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    const vp_model_cfg* c = &m->cfg;
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(m->backend, &k));
    const int nb = c->n_branches;
    const int64_t HH = c->head_hidden, Z = c->n_atoms, B = batch, HH2 = HH * HH;
    const vp_branch_map br = vp_model_branch_map(c);
    vp_tensor ah = vp_acts_rows(&a->ah, B), adv = vp_acts_rows(&a->adv, B);
    vp_tensor S = rows_of(&a->xb_s, 0, nb * B, HH), Sp = rows_of(&a->xb_sp, 0, nb * B, HH);
    vp_tensor E = PV(XB_EMBED_W), W = PV(XB_MSG_W), A2 = PV(C51_A2_W), b2 = PV(C51_A2_B);
    // states S_k = relu(ah E_k^T), one batched product over the branches
    VP_TRY(bgemm(m, 0, 1, B, HH, HH, nb, 0, HH2, B * HH, 0.0f, &ah, &E, NULL, &S));
    VP_TRY(vp_unary(m->backend, VP_UNARY_RELU, &S, &S));
    // messages: S'_k = S_k + sum_j S_j W_jk^T, one batched product over destinations per source
    VP_TRY(vp_copy(m->backend, &S, &Sp));
    for (int j = 0; j < nb; ++j) {
        vp_tensor Sj = rows_of(&S, j * B, B, HH), Wj = rows_of(&W, (int64_t)j * nb * HH, nb * HH, HH);
        VP_TRY(bgemm(m, 0, 1, B, HH, HH, nb, 0, HH2, B * HH, 1.0f, &Sj, &Wj, NULL, &Sp));
    }
    // each branch's advantage rows from its state, then the advantage layout
    int o = 0;
    for (int q = 0; q < nb; ++q) {
        const int64_t w = (int64_t)br.size[q] * Z;
        vp_tensor Spq = rows_of(&Sp, q * B, B, HH), A2q = rows_of(&A2, o * Z, w, HH);
        vp_tensor b2q = vp_tensor_1d((float*)b2.data + o * Z, VP_F32, b2.mem, w);
        vp_tensor Tq = vp_tensor_2d((float*)a->xb_t.data + B * o * Z, VP_F32, a->xb_t.mem, B, w);
        VP_TRY(bgemm(m, 0, 1, B, w, HH, 1, 0, 0, 0, 0.0f, &Spq, &A2q, &b2q, &Tq));
        o += br.size[q];
    }
    return k->xb_pack(m->backend, B, (int)Z, &br, 1, (const float*)a->xb_t.data, (float*)adv.data);
}

vp_status vp_model_xb_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    const vp_model_cfg* c = &m->cfg;
    vp_backend* be = m->backend;
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(be, &k));
    const int nb = c->n_branches;
    const int64_t HH = c->head_hidden, Z = c->n_atoms, B = batch, HH2 = HH * HH;
    const vp_branch_map br = vp_model_branch_map(c);
    vp_tensor ah = vp_acts_rows(&a->ah, B), d_adv = vp_acts_rows(&a->d_adv, B), d_ah = vp_acts_rows(&a->d_ah, B);
    vp_tensor S = rows_of(&a->xb_s, 0, nb * B, HH), Sp = rows_of(&a->xb_sp, 0, nb * B, HH);
    vp_tensor dS = rows_of(&a->xb_ds, 0, nb * B, HH), dSp = rows_of(&a->xb_dsp, 0, nb * B, HH);
    vp_tensor E = PV(XB_EMBED_W), W = PV(XB_MSG_W), A2 = PV(C51_A2_W);
    vp_tensor gE = GV(XB_EMBED_W), gW = GV(XB_MSG_W), gA2 = GV(C51_A2_W), gb2 = GV(C51_A2_B);
    // the blocks' gradients; each branch's output layer: weights, bias, d S'_k
    VP_TRY(k->xb_pack(be, B, (int)Z, &br, 0, (const float*)d_adv.data, (float*)a->xb_dt.data));
    int o = 0;
    for (int q = 0; q < nb; ++q) {
        const int64_t w = (int64_t)br.size[q] * Z;
        vp_tensor dT = vp_tensor_2d((float*)a->xb_dt.data + B * o * Z, VP_F32, a->xb_dt.mem, B, w);
        vp_tensor Spq = rows_of(&Sp, q * B, B, HH), dSpq = rows_of(&dSp, q * B, B, HH);
        vp_tensor A2q = rows_of(&A2, o * Z, w, HH), gA2q = rows_of(&gA2, o * Z, w, HH);
        vp_tensor gb2q = vp_tensor_1d((float*)gb2.data + o * Z, VP_F32, gb2.mem, w);
        VP_TRY(bgemm(m, 1, 0, w, HH, B, 1, 0, 0, 0, 0.0f, &dT, &Spq, NULL, &gA2q));
        VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &dT, &gb2q));
        VP_TRY(bgemm(m, 0, 0, B, HH, w, 1, 0, 0, 0, 0.0f, &dT, &A2q, NULL, &dSpq));
        o += br.size[q];
    }
    // messages: d S_j = d S'_j + sum_k d S'_k W_jk (batched over sources j per destination k)
    VP_TRY(vp_copy(be, &dSp, &dS));
    for (int q = 0; q < nb; ++q) {
        vp_tensor dSpq = rows_of(&dSp, q * B, B, HH);
        vp_tensor Wq = rows_of(&W, (int64_t)q * HH, ((int64_t)nb * nb - q) * HH, HH);
        VP_TRY(bgemm(m, 0, 0, B, HH, HH, nb, 0, (int64_t)nb * HH2, B * HH, 1.0f, &dSpq, &Wq, NULL, &dS));
    }
    // g W_jk = d S'_k^T S_j (batched over destinations k per source j)
    for (int j = 0; j < nb; ++j) {
        vp_tensor Sj = rows_of(&S, j * B, B, HH), gWj = rows_of(&gW, (int64_t)j * nb * HH, nb * HH, HH);
        VP_TRY(bgemm(m, 1, 0, HH, HH, B, nb, B * HH, 0, HH2, 0.0f, &dSp, &Sj, NULL, &gWj));
    }
    // through the states' relu: g E_k = d pre_k^T ah, d ah = sum_k d pre_k E_k
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &S, &dS, &dS));
    VP_TRY(bgemm(m, 1, 0, HH, HH, B, nb, B * HH, 0, HH2, 0.0f, &dS, &ah, NULL, &gE));
    for (int q = 0; q < nb; ++q) {
        vp_tensor dSq = rows_of(&dS, q * B, B, HH), Eq = rows_of(&E, q * HH, HH, HH);
        VP_TRY(bgemm(m, 0, 0, B, HH, HH, 1, 0, 0, 0, q ? 1.0f : 0.0f, &dSq, &Eq, NULL, &d_ah));
    }
    return VP_OK;
}
