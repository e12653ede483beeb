/* The flat parameter buffer of heads over the market encoder (PPO's, IQL's): its layout, its
 * allocation and initial values, the views a checkpoint lists, and the portfolio projection
 * with the encoder's backward that every such network ends its own backward with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/headnet.h"
#include "model/model_internal.h"
#include "vulpes/ops.h"
#include "vulpes/rng.h"

/* Rounds n up to the table's alignment. */
static int64_t aligned(int64_t n) { return (n + VP_PARAM_ALIGN - 1) / VP_PARAM_ALIGN * VP_PARAM_ALIGN; }

int64_t vp_headnet_layout(int64_t n_enc, int n, const int64_t (*dims)[2], int64_t* off, int64_t (*shape)[2]) {
    int64_t o = n_enc;
    for (int h = 0; h < n; ++h) {
        off[h] = o;
        shape[h][0] = dims[h][0];
        shape[h][1] = dims[h][1] ? dims[h][1] : 1;
        o += aligned(shape[h][0] * shape[h][1]);
    }
    return o;
}

/* The heads' initial values into host [n_weights] (the encoder's part already there). */
static void init_heads(int n, const int64_t* off, const int64_t (*shape)[2], const float* scale, float* host,
                       uint64_t seed, uint64_t stream) {
    for (int h = 0; h < n; ++h) {
        // fan_in: the weight's columns; a bias takes its weight's
        const int w = (h % 2 == 0) ? h : h - 1;
        const double bound = 1.0 / sqrt((double)shape[w][1]);
        const int64_t numel = shape[h][0] * shape[h][1];
        for (int64_t i = 0; i < numel; ++i) {
            const float u = vp_rng_uniform(seed, stream + (uint64_t)h, (uint64_t)i);
            host[off[h] + i] = (float)((double)scale[h] * bound * (2.0 * (double)u - 1.0));
        }
    }
}

vp_status vp_headnet_alloc(vp_model* enc, int64_t n_weights, int n, const int64_t* off, const int64_t (*shape)[2],
                           const float* scale, uint64_t seed, uint64_t stream, vp_buffer* pbuf, vp_buffer* gbuf,
                           vp_tensor* params, vp_tensor* grads) {
    vp_backend* b = enc->backend;
    const int64_t n_enc = enc->n_weights;
    const vp_mem mem = vp_backend_native_mem(b);
    const size_t bytes = sizeof(float) * (size_t)n_weights;
    vp_status s = vp_buffer_alloc(b, mem, bytes, pbuf);
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, bytes, gbuf);
    float* host = s == VP_OK ? (float*)calloc((size_t)n_weights, sizeof(float)) : NULL;
    if (s == VP_OK && !host) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "network: out of host memory for %lld "
                                              "parameters", (long long)n_weights);
    if (s == VP_OK) {
        *params = vp_tensor_1d(pbuf->dev, VP_F32, mem, n_weights);
        *grads = vp_tensor_1d(gbuf->dev, VP_F32, mem, n_weights);
        // the encoder computes on views of the flat buffers' first rows; its own buffers go
        enc->params = vp_tensor_1d(params->data, VP_F32, mem, n_enc);
        enc->grads = vp_tensor_1d(grads->data, VP_F32, mem, n_enc);
        vp_buffer_free(b, &enc->param_buf);
        vp_buffer_free(b, &enc->grad_buf);
        s = vp_model_init_params(enc, &enc->params, seed);
    }
    if (s == VP_OK) s = vp_download(b, host, params, sizeof(float) * (size_t)n_enc);
    if (s == VP_OK) {
        init_heads(n, off, shape, scale, host, seed, stream);
        s = vp_upload(b, params, host, bytes);
    }
    free(host);
    if (s != VP_OK) {
        vp_buffer_free(b, pbuf);
        vp_buffer_free(b, gbuf);
    }
    return s;
}

vp_tensor vp_headnet_view(const vp_tensor* flat, int64_t off, const int64_t shape[2], int vector) {
    float* p = (float*)flat->data + off;
    if (vector) return vp_tensor_1d(p, VP_F32, flat->mem, shape[0]);
    return vp_tensor_2d(p, VP_F32, flat->mem, shape[0], shape[1]);
}

int vp_headnet_dqn_row(const char* name) { return strncmp(name, "c51.", 4) == 0 || strncmp(name, "iqn.", 4) == 0; }

int vp_headnet_enc_tensors(const vp_model* enc, const vp_tensor* enc_flat, const char** names, vp_tensor* views,
                           int cap) {
    int k = 0;
    for (int i = 0; i < enc->n_params; ++i) {
        if (vp_headnet_dqn_row(enc->info[i].name)) continue;
        if (enc_flat && names && views && k < cap) {
            names[k] = enc->info[i].name;
            views[k] = vp_model_param_view(enc, enc_flat, &enc->info[i]);
        }
        ++k;
    }
    return k;
}

int64_t vp_headnet_enc_numel(const vp_model* enc) {
    int64_t total = 0;
    for (int i = 0; i < enc->n_params; ++i)
        if (!vp_headnet_dqn_row(enc->info[i].name)) total += enc->info[i].numel;
    return total;
}

vp_status vp_headnet_project(const vp_model* m, const vp_tensor* enc_params, const vp_tensor* e,
                             const vp_tensor* port, vp_tensor* h) {
    vp_tensor pw = vp_model_slot(m, enc_params, VP_PS_PORT_W), pb = vp_model_slot(m, enc_params, VP_PS_PORT_B);
    VP_TRY(vp_copy(m->backend, e, h));
    return vp_model_linear(m, port, &pw, &pb, VP_EPI_BIAS, 1.0f, h);
}

vp_status vp_headnet_backward(vp_model* m, const vp_tensor* enc_params, vp_model_acts* ea, const vp_tensor* port,
                              const vp_tensor* d_h, int64_t B) {
    // the portfolio projection; d e = d h
    vp_tensor pw = vp_model_slot(m, enc_params, VP_PS_PORT_W);
    vp_tensor gpw = vp_model_slot(m, &m->grads, VP_PS_PORT_W), gpb = vp_model_slot(m, &m->grads, VP_PS_PORT_B);
    VP_TRY(vp_model_linear_backward(m, port, &pw, d_h, &gpw, &gpb, NULL, 0.0f));
    // the encoder (Mamba2, TLOB or none) from d e = d h, then the trunk
    return vp_model_encoder_backward_from(m, enc_params, ea, d_h, B);
}
