/* The replay ring on the CUDA backend: kernels, then launchers. Per-element work is the
 * shared math of replay_math.h; the scans, tree levels and reductions run in a fixed
 * partition, and the only atomics are integer max operations whose result does not
 * depend on their order, so every run gives the same bits, equal to the CPU loops'. */
#include <math.h>
#include <stdint.h>

#include "backend/kit.h"
#include "learn/replay_impl.h"
#include "learn/replay_math.h"

/* Threads of the per-env and per-sample kernels. */
#define RP_THREADS 256
/* Threads of the scan and weight kernels. */
#define RP_BLOCK 1024
/* Envs each scan thread takes (RP_BLOCK x RP_SCAN_ITEMS = VP_REPLAY_SCAN_TILE). */
#define RP_SCAN_ITEMS 4
static_assert(RP_BLOCK * RP_SCAN_ITEMS == VP_REPLAY_SCAN_TILE, "a push tile is one block's envs");
/* Nodes of one level a tree block reduces (2^RP_TREE_LEVELS). */
#define RP_TREE_TILE 1024
/* Levels one tree pass builds. */
#define RP_TREE_LEVELS 10

/* ---- kernels: push ---------------------------------------------------------------------------- */

/* Exclusive prefix sum over the block of each thread's `local` (all RP_BLOCK threads must
 * call it); *tile_total gets the block's sum. Integer sums: exact in any order. */
__device__ int rp_block_exclusive_scan(int local, int* tile_total) {
    __shared__ int warp_sum[RP_BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int incl = local;
    for (int o = 1; o < 32; o <<= 1) {
        int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
    }
    __syncthreads(); /* warp_sum may still be read by a previous call */
    if (lane == 31) warp_sum[warp] = incl;
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < nw; ++w) {
        if (w < warp) before += warp_sum[w];
        total += warp_sum[w];
    }
    *tile_total = total;
    return before + incl - local;
}

/* Block b takes tile b (VP_REPLAY_SCAN_TILE envs, RP_SCAN_ITEMS consecutive ones per
 * thread): each env's transition count, their exclusive prefix sum within the tile into
 * emit_off, and the tile's sum into tile_off[b]. A push of one tile (single) does the tile
 * kernel's part here too: its offset 0 and the counters' advance by its sum. */
__global__ void replay_push_count_kernel(vp_replay_dev d, vp_replay_step_dev s, int single) {
    const int64_t e0 = (int64_t)blockIdx.x * VP_REPLAY_SCAN_TILE + (int64_t)threadIdx.x * RP_SCAN_ITEMS;
    int cnt[RP_SCAN_ITEMS], local = 0, tile_total;
    for (int i = 0; i < RP_SCAN_ITEMS; ++i) {
        cnt[i] = e0 + i < d.n_envs ? vp_replay_env_count(&d, &s, e0 + i) : 0;
        local += cnt[i];
    }
    int off = rp_block_exclusive_scan(local, &tile_total);
    for (int i = 0; i < RP_SCAN_ITEMS; ++i) {
        if (e0 + i < d.n_envs) d.emit_off[e0 + i] = off;
        off += cnt[i];
    }
    if (threadIdx.x == 0 && single) {
        d.tile_off[0] = 0;
        vp_replay_ctrl_advance(d.ctrl, tile_total, d.cap);
    } else if (threadIdx.x == 0) {
        d.tile_off[blockIdx.x] = tile_total;
    }
}

/* One block: tile sums -> exclusive tile offsets (in place, RP_SCAN_ITEMS per thread per
 * round), then the counters' advance by the grand total. */
__global__ void replay_push_tiles_kernel(vp_replay_dev d, int64_t n_tiles) {
    int64_t carry = 0;
    for (int64_t t0 = 0; t0 < n_tiles; t0 += (int64_t)blockDim.x * RP_SCAN_ITEMS) {
        const int64_t i0 = t0 + (int64_t)threadIdx.x * RP_SCAN_ITEMS;
        int v[RP_SCAN_ITEMS], local = 0, round_total;
        for (int i = 0; i < RP_SCAN_ITEMS; ++i) {
            v[i] = i0 + i < n_tiles ? d.tile_off[i0 + i] : 0;
            local += v[i];
        }
        int64_t off = carry + rp_block_exclusive_scan(local, &round_total);
        for (int i = 0; i < RP_SCAN_ITEMS; ++i) {
            if (i0 + i < n_tiles) d.tile_off[i0 + i] = (int32_t)off;
            off += v[i];
        }
        carry += round_total;
    }
    if (threadIdx.x == 0) vp_replay_ctrl_advance(d.ctrl, carry, d.cap);
}

/* One thread per env: append, write the completed transitions, drop them. */
__global__ void replay_push_emit_kernel(vp_replay_dev d, vp_replay_step_dev s) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= d.n_envs) return;
    vp_replay_env_push(&d, &s, e, vp_replay_env_first(&d, e));
}

/* ---- kernels: sampling ---------------------------------------------------------------------- */

/* Builds `levels` sum-tree levels above level k0: block b reduces level-k0 nodes
 * [b * RP_TREE_TILE, (b + 1) * RP_TREE_TILE) pairwise in shared memory (missing nodes are 0)
 * and writes every level it forms. Needs RP_TREE_TILE / 2 threads. */
__global__ void replay_tree_kernel(vp_replay_dev d, int k0, int levels) {
    __shared__ float sh[RP_TREE_TILE];
    const int t = threadIdx.x;
    const float* src = k0 == 0 ? d.prio : d.tree + d.level_off[k0];
    const int64_t n0 = vp_replay_level_n(d.cap, k0), first = (int64_t)blockIdx.x * RP_TREE_TILE;
    for (int i = t; i < RP_TREE_TILE; i += blockDim.x) sh[i] = first + i < n0 ? src[first + i] : 0.0f;
    __syncthreads();
    int width = RP_TREE_TILE;
    for (int m = 1; m <= levels; ++m) {
        width >>= 1;
        float v = t < width ? sh[2 * t] + sh[2 * t + 1] : 0.0f;
        __syncthreads();
        if (t < width) {
            sh[t] = v;
            int64_t gi = (int64_t)blockIdx.x * width + t;
            if (gi < vp_replay_level_n(d.cap, k0 + m)) d.tree[d.level_off[k0 + m] + gi] = v;
        }
        __syncthreads();
    }
}

/* One thread per sample: draw a slot, gather it; PER parks the slot's priority in the
 * weight column for the weight kernel. */
__global__ void replay_sample_kernel(vp_replay_dev d, vp_replay_batch_dev o) {
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= o.n) return;
    const int64_t step = d.ctrl->sample_step, size = d.ctrl->size;
    const float total = d.prioritized ? vp_replay_root(&d) : 0.0f;
    int64_t i = vp_replay_sample_index(&d, step, j, o.n, total, size);
    vp_replay_gather(&d, &o, step, j, i);
    o.w[j] = d.prioritized ? d.prio[i] : (size > 0 ? 1.0f : 0.0f);
}

/* One block: the batch's smallest priority (min is exact in any order), the weights
 * (p_min / p)^beta, then the counters' step. */
__global__ void replay_weight_kernel(vp_replay_dev d, vp_replay_batch_dev o) {
    __shared__ float sh[RP_BLOCK / 32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    const int64_t step = d.ctrl->sample_step;
    const float beta = vp_replay_beta(d.beta0, step, d.beta_steps);
    if (d.prioritized) {
        float m = INFINITY;
        for (int64_t j = tid; j < o.n; j += blockDim.x) m = fminf(m, o.w[j]);
        for (int s = 16; s > 0; s >>= 1) m = fminf(m, __shfl_xor_sync(0xffffffffu, m, s));
        if (lane == 0) sh[warp] = m;
        __syncthreads();
        float p_min = INFINITY;
        for (int w = 0; w < nw; ++w) p_min = fminf(p_min, sh[w]);
        for (int64_t j = tid; j < o.n; j += blockDim.x) o.w[j] = vp_replay_is_weight(o.w[j], p_min, beta);
    }
    __syncthreads(); /* every thread has read the step */
    if (tid == 0) {
        d.ctrl->beta = beta;
        d.ctrl->total = d.prioritized ? vp_replay_root(&d) : 0.0f;
        d.ctrl->sample_step = vp_replay_count_add(step, 1);
    }
}

/* ---- kernels: priority update ------------------------------------------------------------------ */

/* One thread per batch row: the slot's owner becomes the last row naming it (integer max). */
__global__ void replay_claim_kernel(vp_replay_dev d, const int32_t* idx, const float* loss, int64_t n) {
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int64_t i = idx[j];
    if (i < 0 || i >= d.cap || !isfinite(loss[j])) return;
    atomicMax(d.owner + i, (int)j);
}

/* One thread per batch row: raise the running max (an integer max on the bits of a
 * non-negative float orders like the float); the owner stores its priority and frees the
 * slot's claim (other rows only ever see the owner's row or -1, never their own). */
__global__ void replay_write_kernel(vp_replay_dev d, const int32_t* idx, const float* loss, int64_t n) {
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int64_t i = idx[j];
    if (i < 0 || i >= d.cap || !isfinite(loss[j])) return;
    const float p = vp_replay_priority(loss[j], d.eps, d.alpha);
    atomicMax(reinterpret_cast<unsigned int*>(&d.ctrl->max_priority), __float_as_uint(p));
    if (d.owner[i] == (int32_t)j) {
        d.prio[i] = p;
        d.owner[i] = -1;
    }
}

/* ---- launchers ------------------------------------------------------------------------------- */

/* Blocks for n items of RP_THREADS threads. */
static unsigned rp_grid(int64_t n) { return (unsigned)((n + RP_THREADS - 1) / RP_THREADS); }

extern "C" vp_status vp_replay_cuda_push(vp_backend* b, const vp_replay_dev* d, const vp_replay_step_dev* s) {
    VP_REQUIRE(b != NULL && d != NULL && s != NULL, VP_ERR_INVALID_ARG, "vp_replay_cuda_push: NULL argument");
    VP_REQUIRE(d->n_envs >= 1 && d->ctrl != NULL, VP_ERR_INVALID_ARG, "vp_replay_cuda_push: empty ring layout");
    cudaStream_t st = vp_cuda_stream_of(b);
    const int64_t n_tiles = (d->n_envs + VP_REPLAY_SCAN_TILE - 1) / VP_REPLAY_SCAN_TILE;
    // up to one tile of envs (VP_REPLAY_SCAN_TILE) the count kernel also advances the counters
    replay_push_count_kernel<<<(unsigned)n_tiles, RP_BLOCK, 0, st>>>(*d, *s, n_tiles == 1);
    VP_CUDA_CHECK_LAUNCH("replay_push_count_kernel");
    if (n_tiles > 1) {
        replay_push_tiles_kernel<<<1, RP_BLOCK, 0, st>>>(*d, n_tiles);
        VP_CUDA_CHECK_LAUNCH("replay_push_tiles_kernel");
    }
    replay_push_emit_kernel<<<rp_grid(d->n_envs), RP_THREADS, 0, st>>>(*d, *s);
    VP_CUDA_CHECK_LAUNCH("replay_push_emit_kernel");
    return VP_OK;
}

extern "C" vp_status vp_replay_cuda_sample(vp_backend* b, const vp_replay_dev* d, const vp_replay_batch_dev* o) {
    VP_REQUIRE(b != NULL && d != NULL && o != NULL, VP_ERR_INVALID_ARG, "vp_replay_cuda_sample: NULL argument");
    VP_REQUIRE(o->n >= 1 && o->n <= INT32_MAX, VP_ERR_INVALID_ARG, "vp_replay_cuda_sample: batch of %lld rows",
               (long long)o->n);
    cudaStream_t st = vp_cuda_stream_of(b);
    /* the sum tree from the current leaves, RP_TREE_LEVELS levels per pass */
    if (d->prioritized) {
        for (int k = 0; k < d->depth; k += RP_TREE_LEVELS) {
            int levels = d->depth - k < RP_TREE_LEVELS ? d->depth - k : RP_TREE_LEVELS;
            int64_t nk = vp_replay_level_n(d->cap, k);
            unsigned grid = (unsigned)((nk + RP_TREE_TILE - 1) / RP_TREE_TILE);
            replay_tree_kernel<<<grid, RP_TREE_TILE / 2, 0, st>>>(*d, k, levels);
            VP_CUDA_CHECK_LAUNCH("replay_tree_kernel");
        }
    }
    /* draw and gather, then weights and the step */
    replay_sample_kernel<<<rp_grid(o->n), RP_THREADS, 0, st>>>(*d, *o);
    VP_CUDA_CHECK_LAUNCH("replay_sample_kernel");
    replay_weight_kernel<<<1, RP_BLOCK, 0, st>>>(*d, *o);
    VP_CUDA_CHECK_LAUNCH("replay_weight_kernel");
    return VP_OK;
}

extern "C" vp_status vp_replay_cuda_update(vp_backend* b, const vp_replay_dev* d, const int32_t* idx,
                                           const float* loss, int64_t n) {
    VP_REQUIRE(b != NULL && d != NULL && idx != NULL && loss != NULL, VP_ERR_INVALID_ARG,
               "vp_replay_cuda_update: NULL argument");
    VP_REQUIRE(n >= 1 && n <= INT32_MAX, VP_ERR_INVALID_ARG, "vp_replay_cuda_update: batch of %lld rows",
               (long long)n);
    cudaStream_t st = vp_cuda_stream_of(b);
    replay_claim_kernel<<<rp_grid(n), RP_THREADS, 0, st>>>(*d, idx, loss, n);
    VP_CUDA_CHECK_LAUNCH("replay_claim_kernel");
    replay_write_kernel<<<rp_grid(n), RP_THREADS, 0, st>>>(*d, idx, loss, n);
    VP_CUDA_CHECK_LAUNCH("replay_write_kernel");
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

extern "C" const vp_replay_kernels vp_replay_cuda = VP_KERNEL_TABLE(VP_REPLAY_KERNELS, vp_replay, vp_replay_cuda);
