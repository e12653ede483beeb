/* The bus kernels on CUDA: kernels, then launchers. The bus is one block: each thread sums
 * a strided share of the rows and the samples in double, a fixed shared-memory tree joins
 * them (deterministic), and thread 0 runs the finish and the rules (signal_math.h, the CPU's
 * code). The schedule is one thread. Both read and write only device and mapped memory:
 * capturable, no host round trip. */
#include "backend/kit.h"

extern "C" {
#include "learn/signal_math.h"
}

#define SIG_THREADS 256

/* One block of SIG_THREADS threads. */
__global__ void sig_bus_kernel(vp_sig_params p, vp_sig_inputs in, float* ctl, float* sig) {
    __shared__ double sh[VP_SUM_COUNT][SIG_THREADS];
    const int tid = threadIdx.x;
    double acc[VP_SUM_COUNT];
    for (int k = 0; k < VP_SUM_COUNT; ++k) acc[k] = 0.0;
    const int64_t rows = p.batch * p.n_actions;
    for (int64_t r = tid; r < rows; r += SIG_THREADS) vp_sig_row(&p, &in, r, acc);
    for (int64_t i = tid; i < p.batch; i += SIG_THREADS) vp_sig_sample(&p, &in, i, acc);
    for (int k = 0; k < VP_SUM_COUNT; ++k) sh[k][tid] = acc[k];
    __syncthreads();
    for (int h = SIG_THREADS / 2; h > 0; h >>= 1) {
        if (tid < h)
            for (int k = 0; k < VP_SUM_COUNT; ++k) sh[k][tid] += sh[k][tid + h];
        __syncthreads();
    }
    if (tid != 0) return;
    double sums[VP_SUM_COUNT];
    for (int k = 0; k < VP_SUM_COUNT; ++k) sums[k] = sh[k][0];
    vp_sig_finish(&p, sums, in.stats, ctl, sig);
}

/* lr[0] from the 1-based step counter (already counted for this step). */
__global__ void sig_sched_kernel(int schedule, float lr0, int64_t warmup, int64_t total, const int32_t* step,
                                 float* lr) {
    lr[0] = vp_sig_lr_at(schedule, lr0, warmup, total, (int64_t)step[0] - 1);
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_sig_cuda_bus(vp_backend* b, const vp_sig_params* p, const vp_sig_inputs* in, float* ctl,
                                     float* sig) {
    sig_bus_kernel<<<1, SIG_THREADS, 0, vp_cuda_stream_of(b)>>>(*p, *in, ctl, sig);
    VP_CUDA_CHECK_LAUNCH("sig_bus_kernel");
    return VP_OK;
}

extern "C" vp_status vp_sig_cuda_sched(vp_backend* b, int schedule, float lr0, int64_t warmup, int64_t total,
                                       const int32_t* step, float* lr) {
    sig_sched_kernel<<<1, 1, 0, vp_cuda_stream_of(b)>>>(schedule, lr0, warmup, total, step, lr);
    VP_CUDA_CHECK_LAUNCH("sig_sched_kernel");
    return VP_OK;
}

extern "C" const vp_sig_kernels vp_sig_cuda = VP_KERNEL_TABLE(VP_SIG_KERNELS, vp_sig, vp_sig_cuda);
