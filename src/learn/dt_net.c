/* The Decision Transformer's parameters: the encoder's table (vp_model) and the transformer's
 * tensors in one flat buffer, their initialisation, views, the list a checkpoint holds and the
 * cost of a forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "vulpes/dt.h"
#include "vulpes/rng.h"

/* Philox streams of the transformer's initial values (stream + tensor index; apart from the
 * encoder's name-hash streams by its top bits). */
#define DT_INIT_STREAM (0x4454ull << 52)

/* Rounds n up to the table's alignment. */
static int64_t aligned(int64_t n) { return (n + VP_PARAM_ALIGN - 1) / VP_PARAM_ALIGN * VP_PARAM_ALIGN; }

/* Whether the encoder's table row `name` belongs to the DQN heads the network does not use. */
static int dqn_head_row(const char* name) { return strncmp(name, "c51.", 4) == 0 || strncmp(name, "iqn.", 4) == 0; }

vp_status vp_dt_dims_check(const vp_dt_dims* d) {
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "vp_dt_dims_check: NULL argument");
    VP_REQUIRE(d->K >= 1 && d->K <= VP_DT_MAX_CONTEXT && d->L == 3 * d->K, VP_ERR_INVALID_ARG,
               "dt.context = %d: 1 .. %d steps", d->K, VP_DT_MAX_CONTEXT);
    VP_REQUIRE(d->layers >= 1 && d->layers <= VP_DT_MAX_LAYERS, VP_ERR_INVALID_ARG, "dt.layers = %d: 1 .. %d", d->layers,
               VP_DT_MAX_LAYERS);
    VP_REQUIRE(d->D >= 1 && d->NH >= 1 && d->D % d->NH == 0 && d->D / d->NH <= VP_ATTN_MAX_DIM, VP_ERR_INVALID_ARG,
               "dt.embed = %d and dt.heads = %d: the heads must divide the width into heads of at most %d", d->D, d->NH,
               VP_ATTN_MAX_DIM);
    VP_REQUIRE(d->H >= 1 && d->P >= 1 && d->A >= 1 && d->TM >= 1, VP_ERR_INVALID_ARG,
               "vp_dt_dims_check: encoder width %d, portfolio %d, heads %d, timesteps %d", d->H, d->P, d->A, d->TM);
    return VP_OK;
}

/* Appends tensor `name` of rows x cols (0: a vector) at *off. */
static void add(vp_dt_net* n, const char* name, int64_t rows, int64_t cols, int64_t* off) {
    vp_dt_tensor* t = &n->t[n->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->off = *off;
    t->rows = rows;
    t->cols = cols;
    *off += aligned(rows * (cols ? cols : 1));
}

/* The table of tensors after the encoder's, from *off. */
static void layout(vp_dt_net* n, int64_t* off) {
    const int64_t D = n->dims.D, H = n->dims.H, A = n->dims.A, TM = n->dims.TM;
#define DT_ADD_(slot, name, rows, cols) add(n, name, rows, cols, off);
    VP_DT_IN_TENSORS(DT_ADD_)
#undef DT_ADD_
    for (int l = 0; l < n->dims.layers; ++l) {
        char nm[40];
#define DT_ADD_(slot, name, rows, cols)                      \
    snprintf(nm, sizeof nm, "dt.block%d.%s", l, name);       \
    add(n, nm, rows, cols, off);
        VP_DT_BLOCK_TENSORS(DT_ADD_)
#undef DT_ADD_
    }
#define DT_ADD_(slot, name, rows, cols) add(n, name, rows, cols, off);
    VP_DT_OUT_TENSORS(DT_ADD_)
#undef DT_ADD_
}

int vp_dt_in(const vp_dt_net* n, vp_dt_in_slot s) {
    (void)n;
    return (int)s;
}
int vp_dt_blk(const vp_dt_net* n, int l, vp_dt_block_slot s) {
    (void)n;
    return VP_DT_IN_COUNT + l * VP_DT_BLOCK_COUNT + (int)s;
}
int vp_dt_out(const vp_dt_net* n, vp_dt_out_slot s) {
    return VP_DT_IN_COUNT + n->dims.layers * VP_DT_BLOCK_COUNT + (int)s;
}

/* How tensor i starts: 0 zero, 1 one, 2 a linear weight, 3 an embedding table. */
static int init_kind(const vp_dt_net* n, int i) {
    const char* nm = n->t[i].name;
    const size_t len = strlen(nm);
    const int is_ln = strstr(nm, "ln") != NULL;
    if (is_ln) return nm[len - 1] == 'g' ? 1 : 0;
    if (strstr(nm, ".emb") != NULL) return 3;
    if (nm[len - 1] == 'b') return 0;
    return 2;
}

/* The transformer's initial values into host[n_weights] (the encoder's part already there). */
static void init_tensors(const vp_dt_net* n, float* host, uint64_t seed) {
    for (int i = 0; i < n->n_tensors; ++i) {
        const vp_dt_tensor* t = &n->t[i];
        const int kind = init_kind(n, i);
        const int64_t numel = t->rows * (t->cols ? t->cols : 1);
        // a vector weight (the return embedding) has fan-in 1
        const double bound = kind == 3 ? 0.02 * sqrt(3.0) : 1.0 / sqrt((double)(t->cols ? t->cols : 1));
        for (int64_t k = 0; k < numel; ++k) {
            float v = kind == 1 ? 1.0f : 0.0f;
            if (kind >= 2) {
                const float u = vp_rng_uniform(seed, DT_INIT_STREAM + (uint64_t)i, (uint64_t)k);
                v = (float)(bound * (2.0 * (double)u - 1.0));
            }
            host[t->off + k] = v;
        }
    }
}

vp_status vp_dt_net_init(vp_dt_net* n, vp_backend* b, const vp_model_cfg* cfg, const vp_dt_dims* d, uint64_t seed) {
    VP_REQUIRE(n != NULL && b != NULL && cfg != NULL && d != NULL, VP_ERR_INVALID_ARG, "vp_dt_net_init: NULL argument");
    memset(n, 0, sizeof *n);
    VP_REQUIRE(!cfg->q_denoise && !cfg->cross_branch && cfg->risk_budget == 0.0f && cfg->stoch_depth == 0.0f,
               VP_ERR_UNSUPPORTED, "train.algo = dt: model.q_denoise, model.cross_branch, model.risk_budget and "
               "model.stoch_depth are modules of the DQN heads; turn them off (the transformer has its own head)");
    n->dims = *d;
    n->dims.H = cfg->hidden;
    n->dims.P = cfg->n_portfolio;
    n->dims.A = vp_model_cfg_actions(cfg);
    n->dims.L = 3 * d->K;
    n->dims.ln_eps = cfg->ln_eps;
    VP_TRY(vp_dt_dims_check(&n->dims));
    VP_TRY(vp_model_init(&n->enc, b, cfg, seed));
    n->n_enc = n->enc.n_weights;
    int64_t off = n->n_enc;
    layout(n, &off);
    n->n_weights = off;
    const vp_mem mem = vp_backend_native_mem(b);
    const size_t bytes = sizeof(float) * (size_t)off;
    vp_status s = vp_buffer_alloc(b, mem, bytes, &n->param_buf);
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, bytes, &n->grad_buf);
    float* host = s == VP_OK ? (float*)calloc((size_t)off, sizeof(float)) : NULL;
    if (s == VP_OK && !host)
        s = vp_set_error(VP_ERR_OOM, VP_WHERE, "dt network: out of host memory for %lld parameters", (long long)off);
    if (s == VP_OK) {
        n->params = vp_tensor_1d(n->param_buf.dev, VP_F32, mem, off);
        n->grads = vp_tensor_1d(n->grad_buf.dev, VP_F32, mem, off);
        // the encoder computes on views of the flat buffers' first rows; its own buffers go
        n->enc.params = vp_dt_enc_view(n, &n->params);
        n->enc.grads = vp_dt_enc_view(n, &n->grads);
        vp_buffer_free(b, &n->enc.param_buf);
        vp_buffer_free(b, &n->enc.grad_buf);
        s = vp_model_init_params(&n->enc, &n->enc.params, seed);
    }
    if (s == VP_OK) s = vp_download(b, host, &n->params, sizeof(float) * (size_t)n->n_enc);
    if (s == VP_OK) {
        init_tensors(n, host, seed);
        s = vp_upload(b, &n->params, host, bytes);
    }
    if (s == VP_OK) s = vp_fill(b, &n->grads, 0.0f);
    free(host);
    if (s != VP_OK) vp_dt_net_free(n);
    return s;
}

void vp_dt_net_free(vp_dt_net* n) {
    if (!n) return;
    vp_backend* b = n->enc.backend;
    if (b) {
        vp_buffer_free(b, &n->param_buf);
        vp_buffer_free(b, &n->grad_buf);
    }
    vp_model_free(&n->enc);
    memset(n, 0, sizeof *n);
}

vp_tensor vp_dt_view(const vp_dt_net* n, const vp_tensor* flat, int i) {
    const vp_dt_tensor* t = &n->t[i];
    float* p = (float*)flat->data + t->off;
    if (t->cols == 0) return vp_tensor_1d(p, VP_F32, flat->mem, t->rows);
    return vp_tensor_2d(p, VP_F32, flat->mem, t->rows, t->cols);
}

vp_tensor vp_dt_enc_view(const vp_dt_net* n, const vp_tensor* flat) {
    return vp_tensor_1d(flat->data, VP_F32, flat->mem, n->n_enc);
}

int vp_dt_net_tensors(const vp_dt_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    int k = 0;
    const int fill = flat && names && views;
    vp_tensor enc;
    memset(&enc, 0, sizeof enc);
    if (flat) enc = vp_dt_enc_view(n, flat);
    for (int i = 0; i < n->enc.n_params; ++i) {
        if (dqn_head_row(n->enc.info[i].name)) continue;
        if (fill && k < cap) {
            names[k] = n->enc.info[i].name;
            views[k] = vp_model_param_view(&n->enc, &enc, &n->enc.info[i]);
        }
        ++k;
    }
    for (int i = 0; i < n->n_tensors; ++i) {
        if (fill && k < cap) {
            names[k] = n->t[i].name;
            views[k] = vp_dt_view(n, flat, i);
        }
        ++k;
    }
    return k;
}

int64_t vp_dt_net_numel(const vp_dt_net* n) {
    int64_t total = 0;
    for (int i = 0; i < n->enc.n_params; ++i)
        if (!dqn_head_row(n->enc.info[i].name)) total += n->enc.info[i].numel;
    for (int i = 0; i < n->n_tensors; ++i) total += n->t[i].rows * (n->t[i].cols ? n->t[i].cols : 1);
    return total;
}

double vp_dt_forward_macs(const vp_dt_dims* d, int64_t B) {
    const double BK = (double)B * d->K, BL = (double)B * d->L, D = d->D;
    // the state linear and the portfolio projection, per block the QKV, attention (QK^T and AV
    // over the causal half), projection and MLP, then the head
    const double per_block = BL * (3 * D * D + D * D + 8 * D * D) + (double)B * d->L * (d->L + 1) * D;
    return BK * (d->H * D + d->P * d->H) + d->layers * per_block + BL * D * d->A;
}
