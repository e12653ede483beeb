/* The bus kernels on CUDA: kernels, then launchers. The bus runs in two passes: VP_SIG_BLOCKS
 * blocks each sum a grid-strided share of the rows and the samples in double and join their
 * threads in a fixed shared-memory tree into one partial per block; one block then adds the
 * partials in block order (deterministic) and its thread 0 runs the finish and the rules
 * (signal_math.h, the CPU's code). The schedule is one thread. All of it reads and writes
 * device and mapped memory only: capturable, no host round trip. */
#include "backend/kit.h"

extern "C" {
#include "learn/signal_math.h"
}

#define SIG_THREADS 256

static_assert(VP_SUM_COUNT <= 16, "the partials hold 16 sums per block");
static_assert(VP_SIG_COUNT <= 32 && VP_CTL_COUNT <= 32 && VP_STAT_COUNT <= 32, "the finish block has 32 threads");

/* First pass: block k writes its sums into partial[k * 16 + s]. */
__global__ void sig_partial_kernel(vp_sig_params p, vp_sig_inputs in, double* partial) {
    __shared__ double sh[VP_SUM_COUNT][SIG_THREADS];
    const int tid = threadIdx.x;
    double acc[VP_SUM_COUNT];
    for (int k = 0; k < VP_SUM_COUNT; ++k) acc[k] = 0.0;
    const int64_t rows = p.batch * p.n_actions, stride = (int64_t)gridDim.x * SIG_THREADS;
    const int64_t first = (int64_t)blockIdx.x * SIG_THREADS + tid;
    for (int64_t r = first; r < rows; r += stride) vp_sig_row(&p, &in, r, acc);
    for (int64_t i = first; i < p.batch; i += stride) vp_sig_sample(&p, &in, i, acc);
    for (int k = 0; k < VP_SUM_COUNT; ++k) sh[k][tid] = acc[k];
    __syncthreads();
    for (int h = SIG_THREADS / 2; h > 0; h >>= 1) {
        if (tid < h)
            for (int k = 0; k < VP_SUM_COUNT; ++k) sh[k][tid] += sh[k][tid + h];
        __syncthreads();
    }
    if (tid < VP_SUM_COUNT) partial[blockIdx.x * 16 + tid] = sh[tid][0];
}

/* Second pass, one block: thread s adds sum s over the blocks in order; thread 0 finishes on
 * shared copies of the bus and the controls, which the block reads and writes back in one
 * parallel pass each (the bus is mapped memory: one round trip, not one per slot). */
__global__ void sig_finish_kernel(vp_sig_params p, const float* stats, const double* partial, int blocks, float* ctl,
                                  float* sig) {
    __shared__ double sums[VP_SUM_COUNT];
    __shared__ float bus[VP_SIG_COUNT], con[VP_CTL_COUNT], st[VP_STAT_COUNT];
    const int tid = threadIdx.x;
    if (tid < VP_SUM_COUNT) {
        double s = 0.0;
        for (int k = 0; k < blocks; ++k) s += partial[k * 16 + tid];
        sums[tid] = s;
    }
    if (tid < VP_SIG_COUNT) bus[tid] = sig[tid];
    if (tid < VP_CTL_COUNT) con[tid] = ctl[tid];
    if (tid < VP_STAT_COUNT) st[tid] = stats[tid];
    __syncthreads();
    if (tid == 0) vp_sig_finish(&p, sums, st, con, bus);
    __syncthreads();
    if (tid < VP_SIG_COUNT) sig[tid] = bus[tid];
    if (tid < VP_CTL_COUNT) ctl[tid] = con[tid];
}

/* lr[0] from the 1-based step counter (already counted for this step). */
__global__ void sig_sched_kernel(int schedule, float lr0, int64_t warmup, int64_t total, const int32_t* step,
                                 float* lr) {
    lr[0] = vp_sig_lr_at(schedule, lr0, warmup, total, (int64_t)step[0] - 1);
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_sig_cuda_bus(vp_backend* b, const vp_sig_params* p, const vp_sig_inputs* in, float* ctl,
                                     float* sig, double* partial) {
    VP_REQUIRE(partial != NULL, VP_ERR_INVALID_ARG, "cuda signal bus: no scratch for the partial sums");
    // as many blocks as the rows need, at most VP_SIG_BLOCKS
    const int64_t rows = p->batch * p->n_actions;
    const int64_t want = (rows + SIG_THREADS - 1) / SIG_THREADS;
    const int blocks = want < VP_SIG_BLOCKS ? (int)(want > 0 ? want : 1) : VP_SIG_BLOCKS;
    cudaStream_t st = vp_cuda_stream_of(b);
    sig_partial_kernel<<<blocks, SIG_THREADS, 0, st>>>(*p, *in, partial);
    VP_CUDA_CHECK_LAUNCH("sig_partial_kernel");
    sig_finish_kernel<<<1, 32, 0, st>>>(*p, in->stats, partial, blocks, ctl, sig);
    VP_CUDA_CHECK_LAUNCH("sig_finish_kernel");
    return VP_OK;
}

extern "C" vp_status vp_sig_cuda_sched(vp_backend* b, int schedule, float lr0, int64_t warmup, int64_t total,
                                       const int32_t* step, float* lr) {
    sig_sched_kernel<<<1, 1, 0, vp_cuda_stream_of(b)>>>(schedule, lr0, warmup, total, step, lr);
    VP_CUDA_CHECK_LAUNCH("sig_sched_kernel");
    return VP_OK;
}

extern "C" const vp_sig_kernels vp_sig_cuda = VP_KERNEL_TABLE(VP_SIG_KERNELS, vp_sig, vp_sig_cuda);
