/* vulpes: the market encoding of consecutive decision bars with shared rows (src/model/model_span.c).
 *
 * The windows of decision bars t and t + 1 share Kt - 1 of their Kt bars, and the network's per-bar
 * parts read one bar each: the trunk (the input modules included) maps a bar's feature row to its
 * trunk row, and Mamba2's in_proj maps that row to the bar's x, B, C, dt columns. A span of n
 * consecutive windows therefore needs those rows once per distinct bar, n + Kt - 1 of them (fewer
 * where the first windows clamp at row 0), instead of n Kt. vp_model_encode_span computes them
 * once, into per-bar tables, then encodes the windows in chunks. Mamba2's causal conv + SiLU is
 * shared too: at a window step t >= CW - 1 it reads only bars of the window, so it is a function of
 * the bar, kept in a third table with the bar's step sizes dt. Per chunk of windows: z of each
 * window's last bar (its trunk row read in place), the scan reading the window's K rows from the
 * tables by index (its first CW - 1 steps, which see the window's zero padding, computed per
 * window) with the gated RMSNorm after it (one kernel on CUDA), out_proj and the residual. TLOB
 * gathers each window's Kt trunk rows in vp_model_encode's layout and runs its blocks. The rows
 * are the ones vp_model_encode gives: on the CPU, whose products are row-exact, bit for bit. */
#ifndef VULPES_MODEL_SPAN_H
#define VULPES_MODEL_SPAN_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The per-bar tables and index lists of one span of windows (made once, for one network shape). */
typedef struct vp_model_span {
    int64_t begin;   /* decision bar of the first window */
    int64_t windows; /* n: windows of the decision bars begin .. begin + n - 1 */
    int64_t first;   /* the first bar with a row: max(begin - Kt + 1, 0) (earlier rows clamp to row 0) */
    int64_t rows;    /* bars with a row: first .. begin + n - 1 */
    int window;      /* Kt: trunk rows per window (K with a mixer, 1 with encoder none) */
    int hidden;      /* H */
    int64_t in_cols; /* L = H + 2N + NH: Mamba2's in_proj columns kept per bar (0 without Mamba2) */
    vp_arena arena;  /* the buffers below */
    vp_tensor bars;  /* [rows] i32 the bars first, first + 1, ... (set-up: one upload) */
    vp_tensor last;  /* [windows] i32 each window's decision bar as a table row: begin - first + i */
    vp_tensor h2;    /* [rows, H] f32 each bar's trunk row (encoder none: empty, the rows are the encodings) */
    vp_tensor xbcdt; /* [rows, L] f32 each bar's in_proj x, B, C, dt (Mamba2 only; else empty) */
    vp_tensor act;   /* [rows, L] f32 each bar's conv + SiLU x, B, C and softplus dt (Mamba2; mops.h span_conv) */
} vp_model_span;

/* 1 when vp_model_encode_span computes this configuration's encodings exactly as vp_model_encode:
 * every encoder (mamba2, tlob, none) with every input module (variable selection, spectral norm,
 * KAN: each reads a bar's own row; the spectral norm's power step reads only the weights);
 * stochastic depth is an identity outside a training forward. 0 for an invalid configuration. */
int vp_model_span_shares(const vp_model_cfg* c);

/* Makes the tables and index lists of the span of `windows` windows from decision bar `begin`
 * (>= 0) for network m (set-up: one allocation and two uploads). */
vp_status vp_model_span_init(vp_model_span* s, const vp_model* m, int64_t begin, int64_t windows);

/* Frees a span (a zeroed one is a no-op). */
void vp_model_span_free(vp_model_span* s);

/* The encodings of the span's windows into out [>= windows, H] f32 with params [n_weights] and
 * features [T, F] (T > the span's last bar), using activations a: the per-bar rows in calls of
 * chunk x Kt bars (Mamba2's conv table in one call), then the windows in calls of `chunk`
 * (1 <= chunk <= a's batch). The same rows as vp_model_encode of each window's decision bar.
 * Ops only (capturable). */
vp_status vp_model_encode_span(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_model_span* s,
                               const vp_tensor* features, int64_t chunk, vp_tensor* out);

/* GEMM FLOPs of the market encoding of `windows` windows from `rows` per-bar rows (the trunk,
 * the input modules and in_proj's x, B, C, dt per row; z, out_proj and TLOB's blocks per window).
 * With rows = windows x Kt it is vp_model_encode's count (vp_model_flops without the heads). */
double vp_model_span_flops(const vp_model_cfg* c, int64_t windows, int64_t rows);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_SPAN_H */
