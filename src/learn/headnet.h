/* Internal: what the algorithms with their own heads over the DQN network's market encoder
 * (PPO, IQL) share (headnet.c). Their parameters live in one flat buffer: the encoder's table
 * first (its DQN head rows unused and never saved), then head tensors, each a weight followed by
 * its bias (even slots weights, odd slots biases), padded like the encoder's rows. The heads
 * read h = e + W_p p + b_p, the encoding plus the encoder's portfolio projection. */
#ifndef VP_LEARN_HEADNET_H
#define VP_LEARN_HEADNET_H

#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Offsets off [n] and shapes shape [n][2] ([rows, cols], cols 1 for a vector) of n head tensors
 * of dims [n][2] ([rows, cols], cols 0: a vector) laid out after n_enc encoder elements; returns
 * the elements of the flat buffer. */
int64_t vp_headnet_layout(int64_t n_enc, int n, const int64_t (*dims)[2], int64_t* off, int64_t (*shape)[2]);

/* Makes the flat buffers params and grads [n_weights] on enc's backend (storage *pbuf, *gbuf),
 * moves the encoder enc (vp_model_init done) onto views of their first enc->n_weights rows
 * (its own buffers freed), initialises the encoder from seed (vp_model_init_params) and head
 * tensor h (off, shape as vp_headnet_layout's) uniform in +-scale[h] / sqrt(fan_in) from the
 * Philox stream (seed, stream + h), fan_in the columns of its weight (slot h rounded down to
 * even). On failure frees the buffers it made. */
vp_status vp_headnet_alloc(vp_model* enc, int64_t n_weights, int n, const int64_t* off, const int64_t (*shape)[2],
                           const float* scale, uint64_t seed, uint64_t stream, vp_buffer* pbuf, vp_buffer* gbuf,
                           vp_tensor* params, vp_tensor* grads);

/* View of the head tensor at off with shape ([rows, cols]; `vector`: [rows]) inside flat. */
vp_tensor vp_headnet_view(const vp_tensor* flat, int64_t off, const int64_t shape[2], int vector);

/* Whether encoder table row `name` belongs to the DQN heads (c51.*, iqn.*), unused here. */
int vp_headnet_dqn_row(const char* name);

/* The encoder's rows the heads use (every row but the DQN heads'), in table order: returns the
 * count; with enc_flat [n_enc], names and views not NULL, writes each name and view (up to cap). */
int vp_headnet_enc_tensors(const vp_model* enc, const vp_tensor* enc_flat, const char** names, vp_tensor* views,
                           int cap);

/* Elements of the rows vp_headnet_enc_tensors lists. */
int64_t vp_headnet_enc_numel(const vp_model* enc);

/* h [B, H] = e [B, H] + W_p port [B, P] + b_p with the encoder's parameters enc_params [n_enc]
 * at m's precision. */
vp_status vp_headnet_project(const vp_model* m, const vp_tensor* enc_params, const vp_tensor* e,
                             const vp_tensor* port, vp_tensor* h);

/* The backward of the projection and of the encoder (activations ea of its last encode, with
 * backward buffers) from d h [B, H]: writes the encoder's gradients into m->grads. */
vp_status vp_headnet_backward(vp_model* m, const vp_tensor* enc_params, vp_model_acts* ea, const vp_tensor* port,
                              const vp_tensor* d_h, int64_t B);

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_HEADNET_H */
