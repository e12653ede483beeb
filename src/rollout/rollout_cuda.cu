/* The rollout's CUDA kernels: the op path's prepare and act steps (the shared per-window
 * math of rollout_step.h, one block or thread per window), and the fused kernel that runs
 * every step of a window — heads, choice, environment step, log — in one launch.
 *
 * The fused kernel: one thread-block cluster of 4 blocks per window, block r owning action
 * branch r. Each block keeps the heads' weights it needs in shared memory (the value
 * stream's second layer and its branch's rows of the advantage stream's second layer; the
 * first layers' market part comes precomputed per bar, u = W1 e, so only W1 Wp p is left
 * per bar), computes its branch's Q-values and greedy choice, and writes the choice into
 * every block of the cluster (distributed shared memory). After one cluster barrier every
 * block holds the 4 choices and steps its own copy of the window's state through the
 * environment's step (the same bits in every block); block 0 logs, and at the end writes the
 * window's final state back. Kernels, then launchers
 * and the CUDA table of the rollout kernels (rollout_impl.h). */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <math.h>

#include "backend/kit.h"
#include "rollout/rollout_impl.h"

namespace cg = cooperative_groups;

/* Threads of the fused kernel's blocks (a hidden unit each: 2 HH <= this) and of the act kernel's. */
#define VP_RO_FUSED_THREADS 1024
#define VP_RO_ACT_THREADS 64
/* Second-layer rows a warp of the fused kernel reduces at once (independent shuffle chains). */
#define VP_RO_FUSED_ROWS 4
/* The largest action branch (the size branch). */
#define VP_RO_MAX_CHOICES VP_ENV_SIZE_CHOICES

/* Float offsets of the fused kernel's dynamic shared memory. */
typedef struct fused_layout {
    int mv, ma, cv, ca;  /* [HH, 8] x 2, [HH] x 2 */
    int wv2, bv2;        /* [Z, HH], [Z] */
    int wa2, ba2;        /* [4 Z, HH], [4 Z]: the block's branch rows */
    int hid;             /* [2 HH] v1, then ah */
    int val, adv;        /* [Z], [4 Z] */
    int pf, qv;          /* [8], [8] */
    int total;           /* floats */
} fused_layout;

__host__ __device__ static fused_layout fused_layout_of(int hh, int z) {
    fused_layout L;
    int o = 0;
    L.mv = o, o += hh * VP_ENV_PORTFOLIO;
    L.ma = o, o += hh * VP_ENV_PORTFOLIO;
    L.cv = o, o += hh;
    L.ca = o, o += hh;
    L.wv2 = o, o += z * hh;
    L.bv2 = o, o += z;
    L.wa2 = o, o += VP_RO_MAX_CHOICES * z * hh;
    L.ba2 = o, o += VP_RO_MAX_CHOICES * z;
    L.hid = o, o += 2 * hh;
    L.val = o, o += z;
    L.adv = o, o += VP_RO_MAX_CHOICES * z;
    L.pf = o, o += 8;
    L.qv = o, o += 8;
    L.total = o;
    return L;
}

/* ---- op path kernels -------------------------------------------------------------------------- */

/* Window blockIdx.x: its encoding row into eb, its portfolio (thread 0) into pf. */
__global__ void vp_ro_prepare_kernel(vp_ro_dims d, const vp_env_bar* __restrict__ bars, vp_env_state s,
                                     vp_ro_windows w, const float* __restrict__ enc, const int32_t* __restrict__ counter,
                                     float* __restrict__ eb, float* __restrict__ pf) {
    const int64_t i = blockIdx.x;
    if (!vp_ro_active(&w, i, counter[0])) return;
    const float* row = enc + (int64_t)s.t[i] * d.hidden;
    for (int j = threadIdx.x; j < d.hidden; j += blockDim.x) eb[i * d.hidden + j] = row[j];
    if (threadIdx.x == 0) vp_ro_portfolio(&d, bars, &s, &w, i, pf + i * VP_ENV_PORTFOLIO);
}

/* Window i: the choice (greedy with its margin, or forced), the step and its log. */
__global__ void vp_ro_act_kernel(vp_ro_dims d, const vp_env_bar* __restrict__ bars, vp_env_state s, vp_ro_windows w,
                                 vp_ro_records rec, int32_t* __restrict__ scratch, const float* __restrict__ q,
                                 const int32_t* __restrict__ forced, const int32_t* __restrict__ counter) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.n_windows) return;
    const int32_t k = counter[0];
    if (!vp_ro_active(&w, i, k)) {
        w.reward[i] = NAN; /* no step: nothing for a policy with memory to observe */
        return;
    }
    int32_t a[VP_ENV_BRANCHES];
    double margin = VP_RO_NO_MARGIN;
    if (d.forced)
        for (int br = 0; br < VP_ENV_BRANCHES; ++br) a[br] = forced[(int64_t)s.t[i] * VP_ENV_BRANCHES + br];
    else
        margin = vp_action_greedy_margin(&d.layout, q + i * d.layout.n_heads, a);
    vp_ro_step(&d, bars, &s, &w, scratch, k, i, a);
    vp_ro_log(&s, &w, &rec, k, i, a, margin);
}

/* ---- the fused kernel ------------------------------------------------------------------------- */

/* Max over the lanes of a warp (every lane gets it). */
__device__ __forceinline__ float bt_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Dueling logit of branch action j (of S) at atom zz: V + A - mean of the branch's A. */
__device__ __forceinline__ float bt_logit(const float* val, const float* adv, int z, int S, int j, int zz) {
    float mean = 0.0f;
    for (int a = 0; a < S; ++a) mean += adv[a * z + zz];
    mean /= (float)S;
    return val[zz] + adv[j * z + zz] - mean;
}

/* Copies n floats from global to shared memory with the whole block. */
__device__ __forceinline__ void bt_load(float* dst, const float* __restrict__ src, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

/* Second layers, a warp per VP_RO_FUSED_ROWS rows: rows [0, z) are V's (on v1, into val),
 * rows [z, z + S z) the branch's advantages (on ah, into adv); lanes split the HH inputs. */
__device__ __forceinline__ void bt_rows(float* sm, const fused_layout& L, int hh, int z, int S) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, R = z + S * z;
    for (int r0 = warp * VP_RO_FUSED_ROWS; r0 < R; r0 += nw * VP_RO_FUSED_ROWS) {
        float acc[VP_RO_FUSED_ROWS];
#pragma unroll
        for (int q = 0; q < VP_RO_FUSED_ROWS; ++q) {
            const int row = r0 + q;
            acc[q] = 0.0f;
            if (row >= R) continue;
            const float* W = row < z ? sm + L.wv2 + row * hh : sm + L.wa2 + (row - z) * hh;
            const float* x = sm + L.hid + (row < z ? 0 : hh);
            for (int c = lane; c < hh; c += 32) acc[q] += W[c] * x[c];
        }
        // the rows' reductions interleaved, so their shuffle latencies overlap
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
#pragma unroll
            for (int q = 0; q < VP_RO_FUSED_ROWS; ++q) acc[q] += __shfl_xor_sync(0xffffffffu, acc[q], o);
        if (lane < VP_RO_FUSED_ROWS && r0 + lane < R) {
            const int row = r0 + lane;
            float v = acc[0];
#pragma unroll
            for (int q = 1; q < VP_RO_FUSED_ROWS; ++q) v = lane == q ? acc[q] : v;
            if (row < z) sm[L.val + row] = v + sm[L.bv2 + row];
            else sm[L.adv + row - z] = v + sm[L.ba2 + row - z];
        }
    }
}

/* Q of each action of the branch, a warp each: Q = sum_z z p_z with p the softmax of the
 * dueling logits over the atoms, as sum_z z e^(l - max) / sum_z e^(l - max). */
__device__ __forceinline__ void bt_q(float* sm, const fused_layout& L, const vp_ro_fused_weights& fw, int S) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, z = fw.z;
    const float dz = (fw.v_max - fw.v_min) / (float)(z - 1);
    if (warp >= S) return;
    float mx = -INFINITY;
    for (int zz = lane; zz < z; zz += 32) mx = fmaxf(mx, bt_logit(sm + L.val, sm + L.adv, z, S, warp, zz));
    mx = bt_warp_max(mx);
    float se = 0.0f, sq = 0.0f;
    for (int zz = lane; zz < z; zz += 32) {
        const float e = expf(bt_logit(sm + L.val, sm + L.adv, z, S, warp, zz) - mx);
        se += e;
        sq += (fw.v_min + (float)zz * dz) * e;
    }
    for (int o = 16; o > 0; o >>= 1) {
        se += __shfl_xor_sync(0xffffffffu, se, o);
        sq += __shfl_xor_sync(0xffffffffu, sq, o);
    }
    if (lane == 0) sm[L.qv + warp] = sq / se;
}

__global__ void __launch_bounds__(VP_RO_FUSED_THREADS)
    vp_ro_fused_kernel(vp_ro_dims d, vp_ro_fused_weights fw, const vp_env_bar* __restrict__ bars, vp_env_state gs,
                       vp_ro_windows gw, vp_ro_records rec) {
    extern __shared__ float sm[];
    __shared__ double sd[6];                          /* cash, equity, peak, entry, take-profit, stop-loss */
    __shared__ int32_t si[5];                         /* t, window end, position, bars held, episode */
    __shared__ float s_last;                          /* last size */
    __shared__ int32_t ws[5];                         /* steps, offset, last, alive, ruin */
    __shared__ int32_t choice[2][VP_ENV_BRANCHES];    /* the cluster's choices, by step parity */
    __shared__ double margin[2][VP_ENV_BRANCHES];     /* their margins (vp_action_margin), by step parity */
    __shared__ int32_t scratch[VP_ENV_BRANCHES];      /* the action the step reads */
    __shared__ vp_env_fill_rec s_fill;                    /* the fills the step writes */
    __shared__ float s_reward;                            /* the reward the step writes (unread) */
    cg::cluster_group cluster = cg::this_cluster();
    const int br = (int)cluster.block_rank(), tid = threadIdx.x;
    const int64_t win = blockIdx.x / VP_ENV_BRANCHES;
    const int hh = fw.hh, z = fw.z, S = d.layout.size[br];
    const fused_layout L = fused_layout_of(hh, z);

    // weights on chip: both streams' portfolio terms, V's second layer, this branch's A rows
    bt_load(sm + L.mv, fw.mv, hh * VP_ENV_PORTFOLIO);
    bt_load(sm + L.ma, fw.ma, hh * VP_ENV_PORTFOLIO);
    bt_load(sm + L.cv, fw.cv, hh);
    bt_load(sm + L.ca, fw.ca, hh);
    bt_load(sm + L.wv2, fw.w_v2, z * hh);
    bt_load(sm + L.bv2, fw.b_v2, z);
    bt_load(sm + L.wa2, fw.w_a2 + (int64_t)d.layout.offset[br] * z * hh, S * z * hh);
    bt_load(sm + L.ba2, fw.b_a2 + (int64_t)d.layout.offset[br] * z, S * z);
    // the window's state, this block's own copy
    if (tid == 0) {
        si[0] = gs.t[win], si[1] = gs.window_end[win], si[2] = gs.position[win], si[3] = gs.bars_held[win];
        si[4] = (int32_t)gs.episode[win];
        sd[0] = gs.cash[win], sd[1] = gs.equity[win], sd[2] = gs.peak[win], sd[3] = gs.entry[win];
        sd[4] = gs.take_profit[win], sd[5] = gs.stop_loss[win];
        s_last = gs.last_size[win];
        ws[0] = gw.steps[win], ws[1] = gw.offset[win], ws[2] = gw.last[win], ws[3] = gw.alive[win];
        ws[4] = gw.ruin[win];
    }
    vp_env_state ls = {&si[0], &si[1], &si[2], &si[3], (uint32_t*)&si[4], &sd[0], &sd[1], &sd[2], &sd[3], &sd[4],
                       &sd[5], &s_last};
    vp_ro_windows lw = {&ws[0], &ws[1], &ws[2], &ws[3], &ws[4], &s_fill, &s_reward};
    __syncthreads();

    // thread j < 2 HH owns hidden unit j (v1, then ah); its market term of the first row, prefetched
    const int unit = tid < hh ? tid : tid - hh, is_a = tid >= hh, has_unit = tid < 2 * hh;
    const float* u_src = is_a ? fw.u_a : fw.u_v;
    float u = has_unit ? u_src[(int64_t)si[0] * hh + unit] : 0.0f;
    for (int32_t k = 0; ws[3] && k < ws[0]; ++k) {
        const int64_t t = si[0];
        // portfolio of the state at bar t
        if (tid == 0) vp_ro_portfolio(&d, bars, &ls, &lw, 0, sm + L.pf);
        __syncthreads();
        // hidden units: relu(W1 e + W1 bp + b1 + (W1 Wp) p); the next row's term prefetched
        float un = 0.0f;
        if (has_unit) {
            un = u_src[(t + 1 < d.n_rows ? t + 1 : t) * hh + unit];
            const float* M = sm + (is_a ? L.ma : L.mv) + unit * VP_ENV_PORTFOLIO;
            float acc = u + sm[(is_a ? L.ca : L.cv) + unit];
#pragma unroll
            for (int q = 0; q < VP_ENV_PORTFOLIO; ++q) acc += M[q] * sm[L.pf + q];
            sm[L.hid + tid] = fmaxf(acc, 0.0f);
        }
        __syncthreads();
        bt_rows(sm, L, hh, z, S);
        __syncthreads();
        bt_q(sm, L, fw, S);
        __syncthreads();
        // the branch's greedy choice and its margin, into every block of the cluster
        if (tid == 0) {
            const int best = vp_action_argmax(sm + L.qv, S);
            const double m = vp_action_margin(sm + L.qv, S, best);
            for (int r = 0; r < VP_ENV_BRANCHES; ++r) {
                *cluster.map_shared_rank(&choice[k & 1][br], r) = best;
                *cluster.map_shared_rank(&margin[k & 1][br], r) = m;
            }
        }
        cluster.sync();
        // every block steps its copy of the state; block 0 logs (the smallest margin, in branch order)
        if (tid == 0) {
            int32_t a[VP_ENV_BRANCHES];
            double m = 0.0;
            for (int b = 0; b < VP_ENV_BRANCHES; ++b) {
                a[b] = choice[k & 1][b];
                m = (b == 0 || margin[k & 1][b] < m) ? margin[k & 1][b] : m;
            }
            vp_ro_step(&d, bars, &ls, &lw, scratch, k, 0, a);
            if (br == 0) vp_ro_log(&ls, &lw, &rec, k, 0, a, m);
        }
        u = un;
        __syncthreads();
    }
    // the window's end: its flags and its final state (the decision after the window reads it)
    if (tid == 0 && br == 0) {
        gw.alive[win] = ws[3], gw.ruin[win] = ws[4];
        gs.t[win] = si[0], gs.window_end[win] = si[1], gs.position[win] = si[2], gs.bars_held[win] = si[3];
        gs.episode[win] = (uint32_t)si[4];
        gs.cash[win] = sd[0], gs.equity[win] = sd[1], gs.peak[win] = sd[2], gs.entry[win] = sd[3];
        gs.take_profit[win] = sd[4], gs.stop_loss[win] = sd[5], gs.last_size[win] = s_last;
    }
    // no block leaves while another may still write into its shared memory
    cluster.sync();
}

/* ---- launchers -------------------------------------------------------------------------------- */

extern "C" vp_status vp_ro_cuda_prepare(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars,
                                        const vp_env_state* s, const vp_ro_windows* w, const float* enc,
                                        const int32_t* counter, float* eb, float* pf) {
    VP_REQUIRE(d != NULL && bars != NULL && s != NULL && w != NULL && enc != NULL && counter != NULL && eb != NULL &&
                   pf != NULL,
               VP_ERR_INVALID_ARG, "vp_ro_cuda_prepare: NULL argument");
    VP_REQUIRE(d->n_windows >= 1 && d->n_windows <= INT32_MAX && d->hidden >= 1, VP_ERR_INVALID_ARG,
               "vp_ro_cuda_prepare: %lld windows of width %d", (long long)d->n_windows, d->hidden);
    vp_ro_prepare_kernel<<<(unsigned)d->n_windows, 128, 0, vp_cuda_stream_of(b)>>>(*d, bars, *s, *w, enc, counter, eb,
                                                                                   pf);
    VP_CUDA_CHECK_LAUNCH("vp_ro_prepare_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ro_cuda_act(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                                    const vp_ro_windows* w, const vp_ro_records* rec, int32_t* scratch, const float* q,
                                    const int32_t* forced, const int32_t* counter) {
    VP_REQUIRE(d != NULL && bars != NULL && s != NULL && w != NULL && rec != NULL && scratch != NULL &&
                   counter != NULL && (d->forced ? forced != NULL : q != NULL),
               VP_ERR_INVALID_ARG, "vp_ro_cuda_act: NULL argument");
    VP_REQUIRE(d->n_windows >= 1 && d->n_windows <= INT32_MAX, VP_ERR_INVALID_ARG, "vp_ro_cuda_act: %lld windows",
               (long long)d->n_windows);
    unsigned grid = (unsigned)((d->n_windows + VP_RO_ACT_THREADS - 1) / VP_RO_ACT_THREADS);
    vp_ro_act_kernel<<<grid, VP_RO_ACT_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, bars, *s, *w, *rec, scratch, q, forced,
                                                                            counter);
    VP_CUDA_CHECK_LAUNCH("vp_ro_act_kernel");
    return VP_OK;
}

extern "C" int vp_ro_cuda_graph_steps(vp_backend* b, int32_t max_steps) {
    (void)b;
    return max_steps < VP_RO_GRAPH_STEPS ? max_steps : VP_RO_GRAPH_STEPS;
}

/* Bytes of shared memory one block of the fused kernel needs (its largest branch). */
static size_t fused_smem(const vp_ro_dims* d, int hh, int z) {
    (void)d;
    return (size_t)fused_layout_of(hh, z).total * sizeof(float);
}

/* 1 when the current device can launch the fused kernel with the shared memory of heads of
 * width hh and z atoms per block (thread-block clusters: compute capability 9.0 or newer;
 * enough opt-in shared memory). */
extern "C" int vp_ro_cuda_fused_supported(vp_backend* b, const vp_ro_dims* d, int hh, int z) {
    (void)b;
    const size_t smem = fused_smem(d, hh, z);
    int dev = 0, major = 0, optin = 0, cluster = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, dev) != cudaSuccess) return 0;
    // the static shared memory of the kernel is a few hundred bytes; keep 1 KiB for it
    return major >= 9 && cluster && smem + 1024 <= (size_t)optin;
}

/* Launches the fused kernel on the backend's stream: one cluster of 4 blocks (a block per
 * branch) per window, each running all the steps of its window and logging them. */
extern "C" vp_status vp_ro_cuda_fused(vp_backend* b, const vp_ro_dims* d, const vp_ro_fused_weights* fw,
                                      const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                                      const vp_ro_records* rec) {
    VP_REQUIRE(d != NULL && fw != NULL && bars != NULL && s != NULL && w != NULL && rec != NULL, VP_ERR_INVALID_ARG,
               "vp_ro_cuda_fused: NULL argument");
    VP_REQUIRE(fw->hh >= 1 && 2 * fw->hh <= VP_RO_FUSED_THREADS && fw->z >= 2, VP_ERR_INVALID_ARG,
               "vp_ro_cuda_fused: head width %d (1 .. %d) or %d atoms", fw->hh, VP_RO_FUSED_THREADS / 2, fw->z);
    VP_REQUIRE(d->n_windows >= 1 && d->n_windows <= INT32_MAX / VP_ENV_BRANCHES, VP_ERR_INVALID_ARG,
               "vp_ro_cuda_fused: %lld windows", (long long)d->n_windows);
    for (int br = 0; br < VP_ENV_BRANCHES; ++br)
        VP_REQUIRE(d->layout.size[br] >= 1 && d->layout.size[br] <= VP_RO_MAX_CHOICES, VP_ERR_INVALID_ARG,
                   "vp_ro_cuda_fused: branch %d has %d choices (1 .. %d)", br, d->layout.size[br], VP_RO_MAX_CHOICES);
    const size_t smem = fused_smem(d, fw->hh, fw->z);
    VP_CUDA_CHECK(cudaFuncSetAttribute(vp_ro_fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    // one cluster of 4 blocks per window
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(d->n_windows * VP_ENV_BRANCHES), 1, 1);
    cfg.blockDim = dim3(VP_RO_FUSED_THREADS, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = vp_cuda_stream_of(b);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = VP_ENV_BRANCHES;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    VP_CUDA_CHECK(cudaLaunchKernelEx(&cfg, vp_ro_fused_kernel, *d, *fw, bars, *s, *w, *rec));
    VP_CUDA_CHECK_LAUNCH("vp_ro_fused_kernel");
    return VP_OK;
}

extern "C" const vp_ro_kernels vp_ro_cuda = VP_KERNEL_TABLE(VP_RO_KERNELS, vp_ro, vp_ro_cuda);
