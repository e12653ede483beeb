/* `vulpes bench step --gpus N`: the data-parallel learner step on each rank. Strong scaling
 * keeps the global batch B (each rank steps B / N), weak scaling keeps B per rank (the global
 * batch is N B). Each step is captured with its gradient all-reduce inside (vp_learner_set_comm),
 * validated first, then timed as a graph (median of 5 launches); the all-reduce of the gradient
 * buffer is then timed alone the same way, and its share of the step printed. Every rank runs
 * the same sequence of collectives; rank 0 prints the table and the JSON lines. */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "vulpes/learner.h"

/* What the timed bodies run: iters learner steps, or iters all-reduces of the gradients. */
typedef struct scale_ctx {
    vp_learner* l;
    vp_batch* bt;
    vp_comm* comm;
    int iters;
    int allreduce_only; /* 1: the all-reduce alone */
} scale_ctx;

static vp_status scale_body(vp_backend* b, void* ctx) {
    scale_ctx* c = (scale_ctx*)ctx;
    (void)b;
    for (int i = 0; i < c->iters; ++i) {
        if (c->allreduce_only) {
            VP_TRY(vp_comm_allreduce_sum(c->comm, &c->l->model.grads));
        } else {
            VP_TRY(vp_learner_draw_taus(c->l, c->bt));
            VP_TRY(vp_learner_step(c->l, c->bt, NULL));
        }
    }
    return VP_OK;
}

/* One scaling point: a learner at `per_rank` transitions with comm attached; *step_ms and
 * *ar_ms the medians per step and per all-reduce (0 for one rank, which has none). */
static vp_status scale_point(vp_backend* b, vp_comm* comm, int64_t per_rank, int iters, double* step_ms,
                             double* ar_ms, int64_t* weights) {
    vp_learner_cfg cfg = vp_learner_cfg_default();
    cfg.batch = per_rank;
    vp_learner l;
    vp_batch bt;
    vp_buffer fbuf;
    memset(&fbuf, 0, sizeof fbuf);
    VP_TRY(vp_learner_init(&l, b, &cfg));
    vp_status s = vp_learner_batch_init(&l, &bt);
    if (s == VP_OK) s = vp_bench_step_batch(b, &l, &bt, &fbuf);
    if (s == VP_OK) s = vp_learner_set_comm(&l, comm);
    scale_ctx c = {&l, &bt, comm, 1, 0};
    // validated: one step with finite, positive loss and gradient norm
    if (s == VP_OK) s = scale_body(b, &c);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s == VP_OK && !(isfinite(l.stats_host[VP_STAT_LOSS]) && l.stats_host[VP_STAT_GRAD_NORM] > 0.0f &&
                        l.stats_host[VP_STAT_NAN] == 0.0f))
        s = vp_set_error(VP_ERR_NUMERIC, VP_WHERE, "bench step --gpus: validation failed at %lld per rank: loss %g, "
                         "grad norm %g", (long long)per_rank, (double)l.stats_host[VP_STAT_LOSS],
                         (double)l.stats_host[VP_STAT_GRAD_NORM]);
    c.iters = iters;
    if (s == VP_OK) s = vp_bench_time_body(b, scale_body, &c, 1, iters, step_ms);
    *ar_ms = 0.0;
    if (s == VP_OK && vp_comm_size(comm) > 1) {
        c.allreduce_only = 1;
        s = vp_bench_time_body(b, scale_body, &c, 1, iters, ar_ms);
    }
    *weights = l.model.n_weights;
    vp_buffer_free(b, &fbuf);
    vp_learner_free(&l);
    return s;
}

int vp_bench_step_scale(vp_backend* b, const vp_bench_opts* o, vp_comm* comm) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int n = vp_comm_size(comm), rank = vp_comm_rank(comm);
    int64_t B = o->quick ? (cuda ? 1024 : 64) : 8192;
    if (o->batch > 0) B = o->batch;
    const int iters = o->iters > 0 ? o->iters : (cuda ? 10 : 1);
    if (B % n != 0) {
        fprintf(stderr, "vulpes bench step: --gpus %d: the batch %lld is not divisible by %d (strong scaling splits it)\n",
                n, (long long)B, n);
        return 2;
    }
    const char* mode[2] = {"strong", "weak"};
    const int64_t per[2] = {B / n, B};
    double step_ms[2], ar_ms[2];
    int64_t weights = 0;
    for (int m = 0; m < 2; ++m) {
        vp_status s = scale_point(b, comm, per[m], iters, &step_ms[m], &ar_ms[m], &weights);
        if (s != VP_OK) {
            fprintf(stderr, "vulpes bench step: rank %d of %d, %s scaling: %s\n", rank, n, mode[m], vp_last_error());
            return 1;
        }
    }
    if (rank != 0) return 0;
    // rank 0's table and JSON lines
    printf("vulpes bench step --gpus %d on %s (rank 0), %s, default model, %lld weights (%.1f MB of gradients)\n", n,
           vp_backend_name(b), vp_comm_kind_name(vp_comm_get_kind(comm)), (long long)weights, 4e-6 * (double)weights);
    printf("%-8s %6s %12s %12s %10s %12s %10s %14s\n", "scaling", "gpus", "batch/gpu", "global batch", "step ms",
           "all-reduce ms", "share", "samples/s");
    FILE* js = vp_bench_json_open(o);
    for (int m = 0; m < 2; ++m) {
        const int64_t global = per[m] * n;
        const double share = step_ms[m] > 0.0 ? ar_ms[m] / step_ms[m] : 0.0;
        const double rate = (double)global / (step_ms[m] * 1e-3);
        printf("%-8s %6d %12lld %12lld %10.3f %12.3f %9.1f%% %14.0f\n", mode[m], n, (long long)per[m],
               (long long)global, step_ms[m], ar_ms[m], 100.0 * share, rate);
        fprintf(js,
                "{\"bench\":\"step_scale\",\"scaling\":\"%s\",\"backend\":\"%s\",\"device\":\"%s\",\"gpus\":%d,"
                "\"comm\":\"%s\",\"batch_per_gpu\":%lld,\"global_batch\":%lld,\"step_ms\":%.5f,\"allreduce_ms\":%.5f,"
                "\"allreduce_share\":%.5f,\"samples_per_s\":%.1f,\"weights\":%lld,\"iters\":%d}\n",
                mode[m], cuda ? "cuda" : "cpu", vp_backend_name(b), n, vp_comm_kind_name(vp_comm_get_kind(comm)),
                (long long)per[m], (long long)global, step_ms[m], ar_ms[m], share, rate, (long long)weights, iters);
    }
    vp_bench_json_close(js);
    printf("the all-reduce alone is timed apart from the step that contains it; speed-up and efficiency against\n"
           "--gpus 1: strong T1 / TN (ideal N), weak T1 / TN (ideal 1) (docs/distributed.md)\n");
    return 0;
}
