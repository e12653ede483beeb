/* The actor-critic's parameters: the encoder's table (vp_model) and the PPO heads in one
 * flat buffer, their initialisation, views and the list a checkpoint holds. */
#include <string.h>

#include "learn/headnet.h"
#include "vulpes/ppo.h"

/* Philox streams of the head tensors' initial values (stream + slot; apart from the
 * encoder's name-hash streams by its top bits). */
#define HEAD_STREAM (0x5050ull << 48)

/* Names of the head tensors, in slot order. */
static const char* const HEAD_NAMES[VP_PPO_HEAD_COUNT] = {
#define VP_PPO_HEAD_NAME_(slot, name, ...) name,
    VP_PPO_HEADS(VP_PPO_HEAD_NAME_)
#undef VP_PPO_HEAD_NAME_
};

vp_status vp_ppo_net_init(vp_ppo_net* n, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed) {
    VP_REQUIRE(n != NULL && b != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_ppo_net_init: NULL argument");
    memset(n, 0, sizeof *n);
    VP_REQUIRE(!cfg->q_denoise && !cfg->cross_branch && cfg->risk_budget == 0.0f && cfg->stoch_depth == 0.0f,
               VP_ERR_UNSUPPORTED, "train.algo = ppo: model.q_denoise, model.cross_branch, model.risk_budget and "
               "model.stoch_depth are modules of the DQN heads; turn them off (PPO has its own heads)");
    VP_TRY(vp_model_init(&n->enc, b, cfg, seed));
    const int64_t H = cfg->hidden, HH = cfg->head_hidden, A = vp_model_cfg_actions(cfg);
    // the heads after the encoder's table; the policy's output layer starts 100 times smaller
    const int64_t dims[VP_PPO_HEAD_COUNT][2] = {
#define VP_PPO_HEAD_DIMS_(slot, name, rows, cols) {(rows), (cols)},
        VP_PPO_HEADS(VP_PPO_HEAD_DIMS_)
#undef VP_PPO_HEAD_DIMS_
    };
    float scale[VP_PPO_HEAD_COUNT];
    for (int h = 0; h < VP_PPO_HEAD_COUNT; ++h) scale[h] = (h == VP_PPO_PI2_W || h == VP_PPO_PI2_B) ? 0.01f : 1.0f;
    n->n_enc = n->enc.n_weights;
    n->n_weights = vp_headnet_layout(n->n_enc, VP_PPO_HEAD_COUNT, dims, n->head_off, n->head_shape);
    vp_status s = vp_headnet_alloc(&n->enc, n->n_weights, VP_PPO_HEAD_COUNT, n->head_off,
                                   (const int64_t(*)[2])n->head_shape, scale, seed, HEAD_STREAM, &n->param_buf,
                                   &n->grad_buf, &n->params, &n->grads);
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
    return vp_headnet_view(flat, n->head_off[h], n->head_shape[h], h % 2 == 1);
}

vp_tensor vp_ppo_enc_view(const vp_ppo_net* n, const vp_tensor* flat) {
    return vp_tensor_1d(flat->data, VP_F32, flat->mem, n->n_enc);
}

int vp_ppo_net_tensors(const vp_ppo_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    vp_tensor enc;
    memset(&enc, 0, sizeof enc);
    if (flat) enc = vp_ppo_enc_view(n, flat);
    int k = vp_headnet_enc_tensors(&n->enc, flat ? &enc : NULL, names, views, cap);
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
    int64_t total = vp_headnet_enc_numel(&n->enc);
    for (int h = 0; h < VP_PPO_HEAD_COUNT; ++h) total += n->head_shape[h][0] * n->head_shape[h][1];
    return total;
}
