/* The actor-critic's parameters: the encoder's table (vp_model) and the PPO heads in one
 * flat buffer, their initialisation, views and the list a checkpoint holds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "vulpes/ppo.h"
#include "vulpes/rng.h"

/* Philox streams of the head tensors' initial values (stream + slot; apart from the
 * encoder's name-hash streams by its top bits). */
#define HEAD_STREAM (0x5050ull << 48)

/* Names of the head tensors, in slot order. */
static const char* const HEAD_NAMES[VP_PPO_HEAD_COUNT] = {
#define VP_PPO_HEAD_NAME_(slot, name, ...) name,
    VP_PPO_HEADS(VP_PPO_HEAD_NAME_)
#undef VP_PPO_HEAD_NAME_
};

/* Rounds n up to the table's alignment. */
static int64_t aligned(int64_t n) { return (n + VP_PARAM_ALIGN - 1) / VP_PARAM_ALIGN * VP_PARAM_ALIGN; }

/* Whether the encoder's table row `name` belongs to the DQN heads PPO does not use. */
static int dqn_head_row(const char* name) { return strncmp(name, "c51.", 4) == 0 || strncmp(name, "iqn.", 4) == 0; }

/* The heads' initial values into host[n_weights] (the encoder's part already there). */
static void init_heads(const vp_ppo_net* n, float* host, uint64_t seed) {
    for (int h = 0; h < VP_PPO_HEAD_COUNT; ++h) {
        // fan_in: the weight's columns; a bias takes its weight's
        const int w = (h % 2 == 0) ? h : h - 1;
        const double bound = 1.0 / sqrt((double)n->head_shape[w][1]);
        const double scale = (h == VP_PPO_PI2_W || h == VP_PPO_PI2_B) ? 0.01 : 1.0;
        const int64_t numel = n->head_shape[h][0] * n->head_shape[h][1];
        for (int64_t i = 0; i < numel; ++i) {
            const float u = vp_rng_uniform(seed, HEAD_STREAM + (uint64_t)h, (uint64_t)i);
            host[n->head_off[h] + i] = (float)(scale * bound * (2.0 * (double)u - 1.0));
        }
    }
}

vp_status vp_ppo_net_init(vp_ppo_net* n, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed) {
    VP_REQUIRE(n != NULL && b != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_ppo_net_init: NULL argument");
    memset(n, 0, sizeof *n);
    VP_REQUIRE(!cfg->q_denoise && !cfg->cross_branch && cfg->risk_budget == 0.0f && cfg->stoch_depth == 0.0f,
               VP_ERR_UNSUPPORTED, "train.algo = ppo: model.q_denoise, model.cross_branch, model.risk_budget and "
               "model.stoch_depth are modules of the DQN heads; turn them off (PPO has its own heads)");
    VP_TRY(vp_model_init(&n->enc, b, cfg, seed));
    const int64_t H = cfg->hidden, HH = cfg->head_hidden, A = vp_model_cfg_actions(cfg);
    // the heads after the encoder's table
    n->n_enc = n->enc.n_weights;
    int64_t off = n->n_enc;
    int h = 0;
#define VP_PPO_HEAD_ROW_(slot, name, rows, cols)     \
    n->head_off[h] = off;                           \
    n->head_shape[h][0] = (rows);                   \
    n->head_shape[h][1] = (cols) ? (cols) : 1;      \
    off += aligned((int64_t)(rows) * ((cols) ? (cols) : 1)); \
    ++h;
    VP_PPO_HEADS(VP_PPO_HEAD_ROW_)
#undef VP_PPO_HEAD_ROW_
    n->n_weights = off;
    const vp_mem mem = vp_backend_native_mem(b);
    const size_t bytes = sizeof(float) * (size_t)off;
    vp_status s = vp_buffer_alloc(b, mem, bytes, &n->param_buf);
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, bytes, &n->grad_buf);
    float* host = s == VP_OK ? (float*)calloc((size_t)off, sizeof(float)) : NULL;
    if (s == VP_OK && !host) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "ppo network: out of host memory for %lld "
                                              "parameters", (long long)off);
    if (s == VP_OK) {
        n->params = vp_tensor_1d(n->param_buf.dev, VP_F32, mem, off);
        n->grads = vp_tensor_1d(n->grad_buf.dev, VP_F32, mem, off);
        // the encoder computes on views of the flat buffers' first rows; its own buffers go
        n->enc.params = vp_ppo_enc_view(n, &n->params);
        n->enc.grads = vp_ppo_enc_view(n, &n->grads);
        vp_buffer_free(b, &n->enc.param_buf);
        vp_buffer_free(b, &n->enc.grad_buf);
        s = vp_model_init_params(&n->enc, &n->enc.params, seed);
    }
    if (s == VP_OK) s = vp_download(b, host, &n->params, sizeof(float) * (size_t)n->n_enc);
    if (s == VP_OK) {
        init_heads(n, host, seed);
        s = vp_upload(b, &n->params, host, bytes);
    }
    free(host);
    if (s != VP_OK) vp_ppo_net_free(n);
    return s;
}

void vp_ppo_net_free(vp_ppo_net* n) {
    if (!n) return;
    vp_backend* b = n->enc.backend;
    if (b) {
        vp_buffer_free(b, &n->param_buf);
        vp_buffer_free(b, &n->grad_buf);
    }
    vp_model_free(&n->enc);
    memset(n, 0, sizeof *n);
}

vp_tensor vp_ppo_head_view(const vp_ppo_net* n, const vp_tensor* flat, vp_ppo_head h) {
    float* p = (float*)flat->data + n->head_off[h];
    if (h % 2 == 1) return vp_tensor_1d(p, VP_F32, flat->mem, n->head_shape[h][0]);
    return vp_tensor_2d(p, VP_F32, flat->mem, n->head_shape[h][0], n->head_shape[h][1]);
}

vp_tensor vp_ppo_enc_view(const vp_ppo_net* n, const vp_tensor* flat) {
    return vp_tensor_1d(flat->data, VP_F32, flat->mem, n->n_enc);
}

int vp_ppo_net_tensors(const vp_ppo_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    int k = 0;
    vp_tensor enc;
    memset(&enc, 0, sizeof enc);
    if (flat) enc = vp_ppo_enc_view(n, flat);
    for (int i = 0; i < n->enc.n_params; ++i) {
        if (dqn_head_row(n->enc.info[i].name)) continue;
        if (flat && names && views && k < cap) {
            names[k] = n->enc.info[i].name;
            views[k] = vp_model_param_view(&n->enc, &enc, &n->enc.info[i]);
        }
        ++k;
    }
    for (int h = 0; h < VP_PPO_HEAD_COUNT; ++h) {
        if (flat && names && views && k < cap) {
            names[k] = HEAD_NAMES[h];
            views[k] = vp_ppo_head_view(n, flat, (vp_ppo_head)h);
        }
        ++k;
    }
    return k;
}

int64_t vp_ppo_net_numel(const vp_ppo_net* n) {
    int64_t total = 0;
    for (int i = 0; i < n->enc.n_params; ++i)
        if (!dqn_head_row(n->enc.info[i].name)) total += n->enc.info[i].numel;
    for (int h = 0; h < VP_PPO_HEAD_COUNT; ++h) total += n->head_shape[h][0] * n->head_shape[h][1];
    return total;
}
