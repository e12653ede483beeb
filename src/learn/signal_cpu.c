/* The bus kernels on the CPU: the step's sums in one pass over the rows (sample, head) of
 * the C51 distributions and one over the samples, each in index order, then the finish
 * shared with CUDA (signal_math.h). */
#include "learn/signal_math.h"

vp_status vp_sig_cpu_bus(vp_backend* b, const vp_sig_params* p, const vp_sig_inputs* in, float* ctl, float* sig,
                         double* partial) {
    (void)b;
    (void)partial;
    double sums[VP_SUM_COUNT] = {0};
    // one pass over the distributions: entropy, atoms in use, branch gradients, the greedy edge
    const int64_t rows = p->batch * p->n_actions;
    for (int64_t r = 0; r < rows; ++r) vp_sig_row(p, in, r, sums);
    // one over the samples: Q moments, online-target divergence, TD errors
    for (int64_t i = 0; i < p->batch; ++i) vp_sig_sample(p, in, i, sums);
    vp_sig_finish(p, sums, in->stats, ctl, sig);
    return VP_OK;
}

vp_status vp_sig_cpu_sched(vp_backend* b, int schedule, float lr0, int64_t warmup, int64_t total,
                           const int32_t* step, float* lr) {
    (void)b;
    lr[0] = vp_sig_lr_at(schedule, lr0, warmup, total, (int64_t)step[0] - 1);
    return VP_OK;
}

const vp_sig_kernels vp_sig_cpu = VP_KERNEL_TABLE(VP_SIG_KERNELS, vp_sig, vp_sig_cpu);
