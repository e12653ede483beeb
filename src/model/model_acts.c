/* Activations: one arena per batch size, laid out once by the same function that first
 * counts the bytes; the outputs are views into it. */
#include <stdlib.h>
#include <string.h>

#include "model/heads_fold_math.h"
#include "model/model_internal.h"

#define VP_ACTS_ALIGN 256u

/* Either counts bytes (arena NULL) or takes tensors from the arena. */
typedef struct planner {
    vp_arena* arena; /* NULL while counting */
    size_t bytes;    /* bytes counted */
    vp_status err;   /* first failure */
} planner;

/* Takes a [rows, cols] tensor; rows == 0 leaves it empty (a module that is off). */
static void take(planner* pl, vp_tensor* t, const char* name, vp_dtype dt, int64_t rows, int64_t cols) {
    memset(t, 0, sizeof *t);
    if (rows <= 0 || cols <= 0 || pl->err != VP_OK) return;
    if (!pl->arena) {
        size_t b = (size_t)(rows * cols) * vp_dtype_size(dt);
        pl->bytes += (b + VP_ACTS_ALIGN - 1) / VP_ACTS_ALIGN * VP_ACTS_ALIGN;
        return;
    }
    int64_t shape[2] = {rows, cols};
    pl->err = vp_arena_tensor(pl->arena, name, dt, 2, shape, t, NULL);
}

/* take() of an f32 tensor, for the input modules' layout (vp_model_take_fn). */
static void take_f32(void* ctx, vp_tensor* t, const char* name, int64_t rows, int64_t cols) {
    take((planner*)ctx, t, name, VP_F32, rows, cols);
}

/* Lays out every tensor of `a` for its model, batch, taus and backward flag. */
static vp_status layout(vp_model_acts* a, planner* pl) {
    const vp_model_cfg* c = &a->model->cfg;
    const int64_t B = a->max_batch, R = B * vp_model_trunk_steps(c), F = c->n_features, H = c->hidden;
    const int64_t MB = c->encoder == VP_ENCODER_MAMBA2, N = MB ? c->mamba_state : 0, NH = MB ? c->hidden / c->mamba_head_dim : 0;
    const int64_t L = H + 2 * N + NH, XB = H + N, CH = H + 2 * N, CW = c->mamba_conv;
    const int64_t HH = c->head_hidden, Z = c->n_atoms, A = vp_model_cfg_actions(c), Q = B * a->max_taus;
    const int64_t BW = a->for_backward ? 1 : 0, BM = MB ? B : 0, RM = MB ? R : 0;
    // trunk (the pre-LayerNorm values are scratch when only a forward runs)
    take(pl, &a->idx, "idx", VP_I32, R, 1);
    take(pl, &a->x0, "x0", VP_F32, R, F);
    take(pl, &a->a1, "a1", VP_F32, R, H);
    take(pl, &a->h1, "h1", VP_F32, R, H);
    take(pl, &a->h2, "h2", VP_F32, R, H);
    take(pl, &a->mean1, "mean1", VP_F32, R, 1);
    take(pl, &a->rstd1, "rstd1", VP_F32, R, 1);
    if (a->for_backward) {
        take(pl, &a->a2, "a2", VP_F32, R, H);
        take(pl, &a->mean2, "mean2", VP_F32, R, 1);
        take(pl, &a->rstd2, "rstd2", VP_F32, R, 1);
    } else {
        a->a2 = a->a1;
        a->mean2 = a->mean1;
        a->rstd2 = a->rstd1;
    }
    // Mamba2
    take(pl, &a->h2_last, "h2_last", VP_F32, BM, H);
    take(pl, &a->xbcdt, "xbcdt", VP_F32, RM, L);
    take(pl, &a->z, "z", VP_F32, BM, H);
    take(pl, &a->xb_pre, "xb_pre", VP_F32, RM * BW, XB);
    take(pl, &a->xb, "xb", VP_F32, RM, XB);
    take(pl, &a->c_pre, "c_pre", VP_F32, BM * BW, N);
    take(pl, &a->c, "c", VP_F32, BM, N);
    take(pl, &a->dt, "dt", VP_F32, RM, NH);
    take(pl, &a->y, "y", VP_F32, BM, H);
    take(pl, &a->sz, "sz", VP_F32, BM, H);
    take(pl, &a->g, "g", VP_F32, BM, H);
    take(pl, &a->yn, "yn", VP_F32, BM, H);
    take(pl, &a->rms_rstd, "rms_rstd", VP_F32, BM, 1);
    // the encoding: its own rows after a mixer; without one, e aliases h2 (one trunk row per sample)
    take(pl, &a->e, "e", VP_F32, c->encoder == VP_ENCODER_NONE ? 0 : B, H);
    if (c->encoder == VP_ENCODER_NONE) a->e = a->h2;
    vp_model_tlob_layout(a, take_f32, pl);
    // heads
    take(pl, &a->port, "port", VP_F32, B, c->n_portfolio);
    take(pl, &a->h, "h", VP_F32, B, H);
    // the value and advantage hidden rows one block after the other: one batched product
    // writes both (vp_model_heads)
    take(pl, &a->va1, "va1", VP_F32, 2 * B, HH);
    a->v1 = a->va1.data ? vp_tensor_2d(a->va1.data, VP_F32, a->va1.mem, B, HH) : a->va1;
    a->ah = a->va1.data ? vp_tensor_2d((float*)a->va1.data + B * HH, VP_F32, a->va1.mem, B, HH) : a->va1;
    take(pl, &a->v, "v", VP_F32, B, Z);
    take(pl, &a->adv, "adv", VP_F32, B, A * Z);
    take(pl, &a->logp, "logp", VP_F32, B * A, Z);
    take(pl, &a->q, "q", VP_F32, B, A);
    const int64_t PADH = vp_model_heads_padded(c) ? 1 : 0;
    const int64_t Zp = vp_pad4(Z), AZp = vp_pad4(A * Z);
    take(pl, &a->v_pad, "v_pad", VP_F32, B * PADH, Zp);
    take(pl, &a->adv_pad, "adv_pad", VP_F32, B * PADH, AZp);
    take(pl, &a->head_w_pad, "head_w_pad", VP_F32, PADH, Zp * HH + Zp + AZp * HH + AZp);
    const vp_branch_map br = vp_model_branch_map(c);
    const int64_t FOLD = !a->for_backward && !c->cross_branch && !c->adaptive_atoms &&
                         vp_backend_get_kind(a->model->backend) == VP_BACKEND_CUDA &&
                         vp_c51_fold_q_fits((int)HH, (int)Z, &br);
    take(pl, &a->head_fold, "head_fold", VP_F32, FOLD, vp_c51f_floats((int)Z, (int)HH, (int)A));
    take(pl, &a->phi, "phi", VP_F32, Q, H);
    if (a->for_backward) {
        take(pl, &a->cosf, "cosf", VP_F32, Q, c->iqn_cos);
        take(pl, &a->mix, "mix", VP_F32, Q, H);
        take(pl, &a->iq1, "iq1", VP_F32, Q, HH);
    } else {
        // forward only: the mix overwrites phi, the hidden layer reuses the cosines' memory
        vp_tensor both;
        take(pl, &both, "cosf_iq1", VP_F32, Q, c->iqn_cos > HH ? c->iqn_cos : HH);
        a->cosf = vp_tensor_2d(both.data, VP_F32, both.mem, Q, c->iqn_cos);
        a->iq1 = vp_tensor_2d(both.data, VP_F32, both.mem, Q, HH);
        a->mix = a->phi;
    }
    take(pl, &a->zq, "zq", VP_F32, Q, A);
    // backward scratch
    take(pl, &a->d_logit, "d_logit", VP_F32, B * A * BW, Z);
    take(pl, &a->d_v, "d_v", VP_F32, B * BW, Z);
    take(pl, &a->d_adv, "d_adv", VP_F32, B * BW, A * Z);
    take(pl, &a->d_v1, "d_v1", VP_F32, B * BW, HH);
    take(pl, &a->d_ah, "d_ah", VP_F32, B * BW, HH);
    take(pl, &a->d_h, "d_h", VP_F32, B * BW, H);
    take(pl, &a->d_iq1, "d_iq1", VP_F32, Q * BW, HH);
    take(pl, &a->d_mix, "d_mix", VP_F32, Q * BW, H);
    a->d_phi = a->d_mix; // the mix backward writes d phi over d mix, element by element
    take(pl, &a->d_yn, "d_yn", VP_F32, BM * BW, H);
    take(pl, &a->d_g, "d_g", VP_F32, BM * BW, H);
    take(pl, &a->d_y, "d_y", VP_F32, BM * BW, H);
    take(pl, &a->d_z, "d_z", VP_F32, BM * BW, H);
    take(pl, &a->d_last, "d_last", VP_F32, BM * BW, H);
    take(pl, &a->d_xb, "d_xb", VP_F32, RM * BW, XB);
    take(pl, &a->d_c, "d_c", VP_F32, BM * BW, N);
    take(pl, &a->d_xbcdt, "d_xbcdt", VP_F32, RM * BW, L);
    take(pl, &a->p_alog, "p_alog", VP_F32, BM * BW, NH);
    take(pl, &a->p_d, "p_d", VP_F32, BM * BW, NH);
    take(pl, &a->p_dtb, "p_dtb", VP_F32, BM * BW, NH);
    take(pl, &a->p_convw, "p_convw", VP_F32, BM * BW, CH * CW);
    take(pl, &a->p_convb, "p_convb", VP_F32, BM * BW, CH);
    take(pl, &a->p_l1b, "p_l1b", VP_F32, B * BW, HH);
    take(pl, &a->p_l2w, "p_l2w", VP_F32, (B + VP_IQN_W2_GROUP - 1) / VP_IQN_W2_GROUP * BW, A * HH);
    take(pl, &a->p_phib, "p_phib", VP_F32, B * BW, H);
    take(pl, &a->d_t1, "d_t1", VP_F32, R * BW, H);
    take(pl, &a->d_t2, "d_t2", VP_F32, R * BW, H);
    vp_model_input_layout(a, take_f32, pl);
    // head modules (task M2): stochastic depth (training forwards only), Q-denoise
    const int64_t SD = c->stoch_depth > 0.0f && MB && a->for_backward ? B : 0, QD = c->q_denoise ? B : 0;
    take(pl, &a->sd_o, "sd_o", VP_F32, SD, H);
    take(pl, &a->sd_scale, "sd_scale", VP_F32, SD, 1);
    take(pl, &a->sd_d, "sd_d", VP_F32, SD, H);
    take(pl, &a->q_c51, "q_c51", VP_F32, QD, A);
    take(pl, &a->qd_h, "qd_h", VP_F32, QD, 2 * A);
    take(pl, &a->qd_dh, "qd_dh", VP_F32, QD * BW, 2 * A);
    const int64_t XBR = c->cross_branch ? c->n_branches * B : 0, XBT = c->cross_branch ? B * A * Z : 0;
    take(pl, &a->xb_s, "xb_s", VP_F32, XBR, HH);
    take(pl, &a->xb_sp, "xb_sp", VP_F32, XBR, HH);
    take(pl, &a->xb_t, "xb_t", VP_F32, XBT, 1);
    take(pl, &a->xb_ds, "xb_ds", VP_F32, XBR * BW, HH);
    take(pl, &a->xb_dsp, "xb_dsp", VP_F32, XBR * BW, HH);
    take(pl, &a->xb_dt, "xb_dt", VP_F32, XBT * BW, 1);
    const int64_t RBB = c->risk_budget > 0.0f ? B : 0;
    take(pl, &a->rb_logit, "rb_logit", VP_F32, RBB, 1);
    take(pl, &a->rb, "rb", VP_F32, RBB, 1);
    take(pl, &a->support, "support", VP_F32, c->adaptive_atoms ? c->n_branches : 0, Z);
    return pl->err;
}

vp_status vp_model_acts_init(vp_model_acts** out, const vp_model* m, int64_t batch, int n_taus, int for_backward) {
    VP_REQUIRE(out != NULL && m != NULL && m->info != NULL, VP_ERR_INVALID_ARG,
               "vp_model_acts_init: out or model is NULL (or the model is not initialised)");
    *out = NULL;
    VP_REQUIRE(batch >= 1, VP_ERR_INVALID_ARG, "vp_model_acts_init: batch %lld < 1", (long long)batch);
    VP_REQUIRE(n_taus >= 0, VP_ERR_INVALID_ARG, "vp_model_acts_init: n_taus %d < 0", n_taus);
    const vp_mops* mops = NULL;
    VP_TRY(vp_mops_get(m->backend, &mops));
    const vp_inops* inops = NULL;
    VP_TRY(vp_inops_get(m->backend, &inops));
    const vp_tlops* tlops = NULL;
    VP_TRY(vp_tlops_get(m->backend, &tlops));
    vp_model_acts* a = (vp_model_acts*)calloc(1, sizeof *a);
    VP_REQUIRE(a != NULL, VP_ERR_OOM, "vp_model_acts_init: out of host memory");
    a->model = m;
    a->mops = mops;
    a->inops = inops;
    a->tlops = tlops;
    a->max_batch = batch;
    a->max_taus = n_taus;
    a->for_backward = for_backward ? 1 : 0;
    // count, allocate once, then lay out for real
    planner pl = {NULL, VP_ACTS_ALIGN, VP_OK};
    vp_status s = layout(a, &pl);
    if (s == VP_OK) s = vp_arena_init(&a->arena, m->backend, vp_backend_native_mem(m->backend), pl.bytes);
    if (s == VP_OK) {
        planner real = {&a->arena, 0, VP_OK};
        s = layout(a, &real);
    }
    // the padded output layers' zero rows, written once (the forward copies the weights over the rest)
    if (s == VP_OK && a->head_w_pad.data) s = vp_fill(m->backend, &a->head_w_pad, 0.0f);
    a->pad_heads = a->head_w_pad.data != NULL && vp_backend_get_kind(m->backend) == VP_BACKEND_CUDA;
    if (s != VP_OK) {
        vp_model_acts_free(a);
        return vp_error_context(s, "activations for batch %lld", (long long)batch);
    }
    *out = a;
    return VP_OK;
}

void vp_model_acts_free(vp_model_acts* a) {
    if (!a) return;
    vp_arena_free(&a->arena);
    free(a);
}

size_t vp_model_acts_bytes(const vp_model_acts* a) { return a ? a->arena.block.bytes : 0; }

vp_tensor vp_acts_rows(const vp_tensor* t, int64_t rows) {
    return vp_tensor_2d(t->data, t->dtype, t->mem, rows, vp_tensor_cols(t));
}

vp_tensor vp_acts_vec(const vp_tensor* t, int64_t n) { return vp_tensor_1d(t->data, t->dtype, t->mem, n); }

vp_trunk_views vp_model_trunk_views(const vp_model_acts* a, int64_t R) {
    vp_trunk_views v;
    v.x0 = vp_acts_rows(&a->x0, R);
    v.a1 = vp_acts_rows(&a->a1, R);
    v.h1 = vp_acts_rows(&a->h1, R);
    v.a2 = vp_acts_rows(&a->a2, R);
    v.h2 = vp_acts_rows(&a->h2, R);
    v.mean1 = vp_acts_vec(&a->mean1, R);
    v.rstd1 = vp_acts_vec(&a->rstd1, R);
    v.mean2 = vp_acts_vec(&a->mean2, R);
    v.rstd2 = vp_acts_vec(&a->rstd2, R);
    return v;
}

/* An empty tensor when the activations are missing or hold no such output. */
static vp_tensor empty_tensor(void) {
    vp_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

vp_tensor vp_model_encoding(const vp_model_acts* a) {
    if (!a || !(a->state & VP_ACTS_ENCODED)) return empty_tensor();
    return vp_acts_rows(&a->e, a->batch);
}

void vp_model_acts_q_only(vp_model_acts* a) {
    if (a && !a->for_backward) a->q_only = 1;
}

void vp_model_acts_fold_heads(vp_model_acts* a) {
    if (a && a->q_only) a->fold_heads = 1;
}

void vp_model_acts_hold_params(vp_model_acts* a, int held) {
    if (!a) return;
    a->params_held = held != 0;
    if (!held) a->pad_of = a->fold_of = NULL; // the next forward copies and folds the output layers again
}

void vp_model_acts_set_lane(vp_model_acts* a, vp_backend* lane) {
    if (a) a->lane = lane;
}

vp_tensor vp_model_log_probs(const vp_model_acts* a) {
    if (!a || !(a->state & VP_ACTS_HEADS) || a->q_only) return empty_tensor();
    const vp_model_cfg* c = &a->model->cfg;
    return vp_tensor_3d(a->logp.data, VP_F32, a->logp.mem, a->batch, vp_model_cfg_actions(c), c->n_atoms);
}

vp_tensor vp_model_q(const vp_model_acts* a) {
    if (!a || !(a->state & VP_ACTS_HEADS)) return empty_tensor();
    return vp_acts_rows(&a->q, a->batch);
}

vp_tensor vp_model_iqn(const vp_model_acts* a) {
    if (!a || !(a->state & VP_ACTS_IQN)) return empty_tensor();
    return vp_tensor_3d(a->zq.data, VP_F32, a->zq.mem, a->batch, a->n_taus, vp_model_cfg_actions(&a->model->cfg));
}
