/* The replay ring on the CUDA backend: kernels, then launchers. Per-element work is the
 * shared math of replay_math.h; the push's scan sums integers, the tree levels and
 * reductions run in a fixed partition, and the only atomics are integer max operations
 * whose result does not depend on their order, so every run gives the same bits, equal to
 * the CPU loops'. */
#include <math.h>
#include <stdint.h>

#include "backend/kit.h"
#include "learn/replay_impl.h"
#include "learn/replay_math.h"

/* Threads of the per-env and per-sample kernels. */
#define RP_THREADS 256
/* Threads of the weight kernel, and the most the block scan takes. */
#define RP_BLOCK 1024
/* Nodes of one level a tree block reduces (2^RP_TREE_LEVELS). */
#define RP_TREE_TILE 1024
/* Levels one tree pass builds. */
#define RP_TREE_LEVELS 10

/* ---- kernels: push ---------------------------------------------------------------------------- */

/* Exclusive prefix sum over the block of each thread's `local` (every thread of a block of
 * at most RP_BLOCK threads must call it); *tile_total gets the block's sum. Integer sums:
 * exact in any order. */
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

/* The push in one pass (a decoupled look-back scan): block b takes envs [256 b, 256 b + 256),
 * one per thread. Each env's transition count, their exclusive prefix sum within the block,
 * then the block's offset in the ring from its predecessors' published states: a block
 * publishes its own sum as soon as it has it (RP_AGGREGATE), and its inclusive prefix once
 * it knows it (RP_INCLUSIVE); a block's first warp walks back over its predecessors' states,
 * 32 at a time, adding sums up to the nearest inclusive prefix. Blocks start in index order,
 * so every predecessor a block waits on is running and publishes without waiting on later
 * blocks. Then each thread writes its env's transitions from the ring's head as the push
 * began. The last block waits until every block has published its inclusive prefix (each has
 * read the counters by then) and moves the counters on. Integer sums: the offsets are those of
 * the CPU's loop, bit for bit.
 *
 * A state is one 64-bit word in the push scratch (d.emit_off): the push's tag (bit 63 set,
 * the push count below it, so a word left by an earlier push, a checkpoint or the CPU loop is
 * never read as this push's), the status in bits 32-33, the sum in the low 32 bits. */
#define RP_PUSH_THREADS 256
#define RP_AGGREGATE 1ull
#define RP_INCLUSIVE 2ull

__device__ __forceinline__ unsigned long long rp_state(unsigned long long tag, unsigned long long status,
                                                       int64_t sum) {
    return tag | (status << 32) | (unsigned long long)(uint32_t)sum;
}

__global__ void __launch_bounds__(RP_PUSH_THREADS) replay_push_kernel(vp_replay_dev d, vp_replay_step_dev s) {
    __shared__ int64_t sh_head, sh_pushes, sh_before;
    volatile unsigned long long* state = reinterpret_cast<volatile unsigned long long*>(d.emit_off);
    const int b = (int)blockIdx.x, nb = (int)gridDim.x, tid = (int)threadIdx.x;
    const int64_t e = (int64_t)b * RP_PUSH_THREADS + tid;
    if (tid == 0) {
        sh_head = d.ctrl->head;
        sh_pushes = d.ctrl->pushes;
    }
    const int cnt = e < d.n_envs ? vp_replay_env_count(&d, &s, e) : 0;
    int block_total;
    const int off = rp_block_exclusive_scan(cnt, &block_total); /* its barriers order the reads above */
    const unsigned long long tag = (1ull << 63) | ((unsigned long long)(sh_pushes & 0x1fffffff) << 34);
    // the look-back, warp 0: 32 predecessors' states a round, the nearest first in lane 0
    if (tid < 32) {
        int64_t before = 0;
        if (b > 0) {
            if (tid == 0) {
                __threadfence(); /* the counters were read before anything is published */
                state[b] = rp_state(tag, RP_AGGREGATE, block_total);
            }
            for (int p = b - 1; p >= 0; p -= 32) {
                const int q = p - tid;
                unsigned long long w = q >= 0 ? state[q] : rp_state(tag, RP_INCLUSIVE, 0);
                while (!__all_sync(0xffffffffu, (w & ~0x3ffffffffull) == tag))
                    if ((w & ~0x3ffffffffull) != tag) w = state[q]; /* not yet published: spin */
                const unsigned incl = __ballot_sync(0xffffffffu, ((w >> 32) & 3ull) == RP_INCLUSIVE);
                const int stop = incl ? __ffs(incl) - 1 : 31; /* the nearest inclusive lane */
                int64_t v = tid <= stop ? (int64_t)(uint32_t)w : 0;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                before += v;
                if (incl) break;
            }
        }
        if (tid == 0) {
            if (nb > 1) {
                __threadfence();
                state[b] = rp_state(tag, RP_INCLUSIVE, before + block_total);
            }
            sh_before = before;
        }
    }
    __syncthreads();
    if (e < d.n_envs) vp_replay_env_push(&d, &s, e, sh_head + sh_before + off);
    if (b != nb - 1) return;
    // the last block: every block has read the counters once every state is inclusive
    for (int p = tid; p < nb - 1; p += RP_PUSH_THREADS)
        while ((state[p] & ~0xffffffffull) != (tag | (RP_INCLUSIVE << 32))) {
        }
    __syncthreads();
    if (tid == 0) vp_replay_ctrl_advance(d.ctrl, sh_before + block_total, d.cap);
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
    const int64_t blocks = (d->n_envs + RP_PUSH_THREADS - 1) / RP_PUSH_THREADS;
    // the blocks' states live in the push scratch: [E] i32, 8-byte aligned, so E / 2 words
    VP_REQUIRE(blocks == 1 || (blocks <= d->n_envs / 2 && (uintptr_t)d->emit_off % 8 == 0), VP_ERR_INVALID_ARG,
               "vp_replay_cuda_push: the push scratch cannot hold %lld block states", (long long)blocks);
    replay_push_kernel<<<(unsigned)blocks, RP_PUSH_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, *s);
    VP_CUDA_CHECK_LAUNCH("replay_push_kernel");
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
