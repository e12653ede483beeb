/* IQL's parameters: the encoder's table (vp_model) and the heads in one flat buffer
 * (learn/headnet.h), their initialisation, views (the target's included) and the list a
 * checkpoint holds. */
#include <string.h>

#include "learn/headnet.h"
#include "vulpes/iql.h"

/* Philox streams of the head tensors' initial values (stream + slot; apart from the encoder's
 * name-hash streams by its top bits and from PPO's heads'). */
#define HEAD_STREAM (0x4951ull << 48)

/* Names of the head tensors, in slot order. */
static const char* const HEAD_NAMES[VP_IQL_HEAD_COUNT] = {
#define VP_IQL_HEAD_NAME_(slot, name, ...) name,
    VP_IQL_HEADS(VP_IQL_HEAD_NAME_)
#undef VP_IQL_HEAD_NAME_
};

vp_status vp_iql_net_init(vp_iql_net* n, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed) {
    VP_REQUIRE(n != NULL && b != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_iql_net_init: NULL argument");
    memset(n, 0, sizeof *n);
    VP_REQUIRE(!cfg->q_denoise && !cfg->cross_branch && cfg->risk_budget == 0.0f && cfg->stoch_depth == 0.0f,
               VP_ERR_UNSUPPORTED, "train.algo = iql: model.q_denoise, model.cross_branch, model.risk_budget and "
               "model.stoch_depth are modules of the DQN heads; turn them off (IQL has its own heads)");
    VP_TRY(vp_model_init(&n->enc, b, cfg, seed));
    const int64_t H = cfg->hidden, HH = cfg->head_hidden, A = vp_model_cfg_actions(cfg);
    // the heads after the encoder's table; the policy's output layer starts 100 times smaller
    const int64_t dims[VP_IQL_HEAD_COUNT][2] = {
#define VP_IQL_HEAD_DIMS_(slot, name, rows, cols) {(rows), (cols)},
        VP_IQL_HEADS(VP_IQL_HEAD_DIMS_)
#undef VP_IQL_HEAD_DIMS_
    };
    float scale[VP_IQL_HEAD_COUNT];
    for (int h = 0; h < VP_IQL_HEAD_COUNT; ++h) scale[h] = (h == VP_IQL_PI_W2 || h == VP_IQL_PI_B2) ? 0.01f : 1.0f;
    n->n_enc = n->enc.n_weights;
    n->n_weights = vp_headnet_layout(n->n_enc, VP_IQL_HEAD_COUNT, dims, n->head_off, n->head_shape);
    n->n_target = n->head_off[VP_IQL_V_W1] - n->head_off[VP_IQL_Q1_W1];
    vp_status s = vp_headnet_alloc(&n->enc, n->n_weights, VP_IQL_HEAD_COUNT, n->head_off,
                                   (const int64_t(*)[2])n->head_shape, scale, seed, HEAD_STREAM, &n->param_buf,
                                   &n->grad_buf, &n->params, &n->grads);
    if (s != VP_OK) vp_iql_net_free(n);
    return s;
}

void vp_iql_net_free(vp_iql_net* n) {
    if (!n) return;
    vp_backend* b = n->enc.backend;
    if (b) {
        vp_buffer_free(b, &n->param_buf);
        vp_buffer_free(b, &n->grad_buf);
    }
    vp_model_free(&n->enc);
    memset(n, 0, sizeof *n);
}

vp_tensor vp_iql_head_view(const vp_iql_net* n, const vp_tensor* flat, vp_iql_head h) {
    return vp_headnet_view(flat, n->head_off[h], n->head_shape[h], h % 2 == 1);
}

vp_tensor vp_iql_q_range(const vp_iql_net* n, const vp_tensor* flat) {
    return vp_tensor_1d((float*)flat->data + n->head_off[VP_IQL_Q1_W1], VP_F32, flat->mem, n->n_target);
}

vp_tensor vp_iql_target_view(const vp_iql_net* n, const vp_tensor* target, vp_iql_head h) {
    return vp_headnet_view(target, n->head_off[h] - n->head_off[VP_IQL_Q1_W1], n->head_shape[h], h % 2 == 1);
}

vp_tensor vp_iql_enc_view(const vp_iql_net* n, const vp_tensor* flat) {
    return vp_tensor_1d(flat->data, VP_F32, flat->mem, n->n_enc);
}

int vp_iql_net_tensors(const vp_iql_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    vp_tensor enc;
    memset(&enc, 0, sizeof enc);
    if (flat) enc = vp_iql_enc_view(n, flat);
    int k = vp_headnet_enc_tensors(&n->enc, flat ? &enc : NULL, names, views, cap);
    for (int h = 0; h < VP_IQL_HEAD_COUNT; ++h) {
        if (flat && names && views && k < cap) {
            names[k] = HEAD_NAMES[h];
            views[k] = vp_iql_head_view(n, flat, (vp_iql_head)h);
        }
        ++k;
    }
    return k;
}

int64_t vp_iql_net_numel(const vp_iql_net* n) {
    int64_t total = vp_headnet_enc_numel(&n->enc);
    for (int h = 0; h < VP_IQL_HEAD_COUNT; ++h) total += n->head_shape[h][0] * n->head_shape[h][1];
    return total;
}

const char* vp_iql_head_name(vp_iql_head h) { return h >= 0 && h < VP_IQL_HEAD_COUNT ? HEAD_NAMES[h] : NULL; }
