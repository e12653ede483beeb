/* GPU test: a data-parallel run of one rank on one GPU.
 * - the one-rank communicator on the CUDA backend leaves device data as it was;
 * - (builds with NCCL) a one-rank NCCL communicator, forced, sums in place inside a captured
 *   graph: 2 x through the graph's all-reduce equals 2 x bit for bit, and the broadcast too;
 * - a training run of a few iterations with the one-rank communicator attached writes the same
 *   metrics.jsonl (timing lines aside) and the same checkpoint bytes as one without; (builds
 *   with NCCL) so does one through the whole loop with a forced one-rank NCCL communicator;
 * - the trainer of rank r of 2 on the GPU starts its envs where the single GPU trainer's envs
 *   r E / 2 .. start, and where the CPU's rank r does (the env kernel's first_env).
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L /* lstat (test_train_util.h) */
#include "gpu_twin.h"
#include "test_train_util.h"
#include "vulpes/dqn.h"

enum { N_X = 100003 }; /* elements: odd, past one NCCL chunk */

/* x [N_X] on the device with fresh values, and its host copy. */
typedef struct dev_x {
    vp_buffer buf, ybuf;
    vp_tensor x, y;
    float* host;
} dev_x;

static int dev_x_make(dev_x* d) {
    memset(d, 0, sizeof *d);
    d->host = (float*)malloc(N_X * sizeof(float));
    if (!d->host || vp_buffer_alloc(g_gpu, VP_MEM_DEVICE, N_X * 4, &d->buf) != VP_OK ||
        vp_buffer_alloc(g_gpu, VP_MEM_DEVICE, N_X * 4, &d->ybuf) != VP_OK) {
        CHECK(0, "allocation: %s", vp_last_error());
        return 0;
    }
    for (int64_t i = 0; i < N_X; ++i) d->host[i] = vp_rng_normal(g_seed, 77, (uint64_t)i) * 3.0f;
    d->x = vp_tensor_1d(d->buf.dev, VP_F32, VP_MEM_DEVICE, N_X);
    d->y = vp_tensor_1d(d->ybuf.dev, VP_F32, VP_MEM_DEVICE, N_X);
    CHECK_OK(vp_upload(g_gpu, &d->x, d->host, N_X * 4));
    return 1;
}

static void dev_x_free(dev_x* d) {
    vp_buffer_free(g_gpu, &d->buf);
    vp_buffer_free(g_gpu, &d->ybuf);
    free(d->host);
}

/* Counts elements of device tensor t that differ from want[N_X] in their bits. */
static int64_t count_diff(const vp_tensor* t, const float* want) {
    float* got = (float*)malloc(N_X * sizeof(float));
    if (!got) return -1;
    int64_t bad = 0;
    if (vp_download(g_gpu, got, t, N_X * 4) != VP_OK) bad = -1;
    for (int64_t i = 0; bad >= 0 && i < N_X; ++i) bad += memcmp(&got[i], &want[i], 4) != 0;
    free(got);
    return bad;
}

static void test_local_comm(void) {
    dev_x d;
    if (!dev_x_make(&d)) return;
    vp_dist one = vp_dist_single();
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &one, g_gpu, NULL));
    CHECK(vp_comm_get_kind(c) == VP_COMM_LOCAL, "kind %s", vp_comm_kind_name(vp_comm_get_kind(c)));
    CHECK_OK(vp_comm_allreduce_sum(c, &d.x));
    CHECK_OK(vp_comm_broadcast(c, &d.x, 0));
    const int64_t bad = count_diff(&d.x, d.host);
    CHECK(bad == 0, "the one-rank communicator changed %lld of %d elements", (long long)bad, N_X);
    printf("%-24s %-40s %11s %9s  %s\n", "comm local", "all-reduce + broadcast, 1 rank", "bitwise", "0",
           bad == 0 ? "ok" : "FAIL");
    vp_comm_free(c);
    dev_x_free(&d);
}

#ifdef VP_NCCL
/* The captured body: y = 2 x, then y summed over the ranks in place. */
typedef struct body_ctx {
    dev_x* d;
    vp_comm* c;
} body_ctx;

static vp_status body(vp_backend* b, void* ctx) {
    body_ctx* k = (body_ctx*)ctx;
    VP_TRY(vp_axpby(b, 2.0f, &k->d->x, 0.0f, &k->d->y));
    return vp_comm_allreduce_sum(k->c, &k->d->y);
}

static void test_nccl_one_rank_in_graph(void) {
    dev_x d;
    if (!dev_x_make(&d)) return;
    vp_dist one = vp_dist_single();
    vp_comm_opts o = vp_comm_opts_default();
    o.force_nccl = 1;
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &one, g_gpu, &o));
    if (!c) {
        dev_x_free(&d);
        return;
    }
    CHECK(vp_comm_get_kind(c) == VP_COMM_NCCL && vp_comm_size(c) == 1, "kind %s size %d",
          vp_comm_kind_name(vp_comm_get_kind(c)), vp_comm_size(c));
    float* want = (float*)malloc(N_X * sizeof(float));
    for (int64_t i = 0; want && i < N_X; ++i) want[i] = 2.0f * d.host[i];
    body_ctx k = {&d, c};
    vp_graph* g = NULL;
    CHECK_OK(vp_graph_capture(g_gpu, body, &k, &g));
    int64_t bad = -1;
    if (g && want) {
        CHECK_OK(vp_fill(g_gpu, &d.y, -1.0f));
        for (int rep = 0; rep < 3; ++rep) CHECK_OK(vp_graph_launch(g_gpu, g));
        CHECK_OK(vp_backend_sync(g_gpu));
        bad = count_diff(&d.y, want);
        CHECK(bad == 0, "NCCL all-reduce of 1 rank in a graph: %lld of %d elements differ from 2 x", (long long)bad,
              N_X);
    }
    printf("%-24s %-40s %11s %9s  %s\n", "comm nccl", "1 rank, all-reduce in a captured graph", "bitwise", "0",
           bad == 0 ? "ok" : "FAIL");
    // the broadcast from rank 0 leaves rank 0's data
    CHECK_OK(vp_comm_broadcast(c, &d.x, 0));
    const int64_t bb = count_diff(&d.x, d.host);
    CHECK(bb == 0, "NCCL broadcast of 1 rank changed %lld elements", (long long)bb);
    vp_graph_free(g);
    free(want);
    vp_comm_free(c);
    dev_x_free(&d);
}
#endif

/* The GPU test config into dir, with communicator comm (NULL: none). */
static vp_status run(const char* dir, vp_comm* comm, vp_train_result* r) {
    const char* over[] = {"run.backend=cuda"};
    return vpt_train_comm(g_gpu, dir, comm, 1, over, r);
}

/* The GPU test config trained into two run folders, plainly and through a one-rank
 * communicator made from opts (NULL: the defaults): the same metrics.jsonl and checkpoints, bit
 * for bit. `how` names the second run in the messages, `row` and `what` the table's row. */
static void check_same_as_plain(const char* tag, const vp_comm_opts* opts, const char* how, const char* row,
                                const char* what) {
    char d1[512], d2[512], t1[64], t2[64];
    snprintf(t1, sizeof t1, "dist_plain_%s", tag);
    snprintf(t2, sizeof t2, "dist_comm_%s", tag);
    vpt_tmp_dir(d1, sizeof d1, t1);
    vpt_tmp_dir(d2, sizeof d2, t2);
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_dist one = vp_dist_single();
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &one, g_gpu, opts));
    if (!c) return;
    vp_train_result r1, r2;
    CHECK_OK(run(d1, NULL, &r1));
    CHECK_OK(run(d2, c, &r2));
    char* a = vpt_metrics_lines(d1, "train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "train|eval|checkpoint");
    const int same_metrics = a && b && vpt_count_lines(a) > 2 && strcmp(a, b) == 0;
    CHECK(same_metrics, "metrics.jsonl %s differs from the plain run", how);
    const int same_ck = vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d2, "best.safetensors");
    CHECK(same_ck, "checkpoints %s differ from the plain run's", how);
    printf("%-24s %-40s %11s %9s  %s\n", row, what, "bitwise", "0", same_metrics && same_ck ? "ok" : "FAIL");
    free(a), free(b);
    vp_comm_free(c);
    vpt_rm_run(d1), vpt_rm_run(d2);
}

static void test_train_with_and_without(void) {
    check_same_as_plain("one", NULL, "with the one-rank communicator", "train 1 rank",
                        "with vs without the communicator");
}

#ifdef VP_NCCL
/* The whole training loop with a forced one-rank NCCL communicator equals the plain run. */
static void test_train_nccl_one_rank(void) {
    vp_comm_opts o = vp_comm_opts_default();
    o.force_nccl = 1;
    check_same_as_plain("nccl", &o, "through the loop with NCCL at one rank", "train 1 rank nccl",
                        "whole loop vs the plain run");
}
#endif

/* The decision bar, window end and episode of every env of trainer t into host arrays. */
static int env_starts(const vp_trainer* t, int32_t* bar, int32_t* end, uint32_t* ep) {
    const int64_t n = t->env.n_envs;
    vp_env_state h;
    char* blk = (char*)calloc((size_t)n, 6 * 8 + 6 * 4);
    if (!blk) return 0;
    h.cash = (double*)blk, h.equity = h.cash + n, h.peak = h.equity + n, h.entry = h.peak + n;
    h.take_profit = h.entry + n, h.stop_loss = h.take_profit + n;
    h.t = bar, h.window_end = end, h.episode = ep;
    h.position = (int32_t*)(h.stop_loss + n), h.bars_held = h.position + n, h.last_size = (float*)(h.bars_held + n);
    const int ok = vp_env_state_get(&t->env, &h) == VP_OK;
    free(blk);
    return ok;
}

static void test_rank_envs(void) {
    vp_config cfg;
    const char* over[] = {"run.backend=cuda", "env.n_envs=8", "learn.batch=32"};
    vp_train_data d;
    memset(&d, 0, sizeof d);
    if (!vpt_train_cfg(&cfg, 3, over) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "test config or data: %s", vp_last_error());
        return;
    }
    vp_trainer one, gpu, cpu;
    int32_t b1[8], e1[8], bg[4], eg[4], bc[4], ec[4];
    uint32_t p1[8], pg[4], pc[4];
    int bad = 0;
    CHECK_OK(vp_trainer_init(&one, g_gpu, &cfg, &d));
    CHECK(env_starts(&one, b1, e1, p1), "env state: %s", vp_last_error());
    for (int r = 0; r < 2; ++r) {
        CHECK_OK(vp_trainer_init_rank(&gpu, g_gpu, &cfg, &d, r, 2));
        CHECK_OK(vp_trainer_init_rank(&cpu, g_cpu, &cfg, &d, r, 2));
        CHECK(env_starts(&gpu, bg, eg, pg) && env_starts(&cpu, bc, ec, pc), "env state: %s", vp_last_error());
        for (int j = 0; j < 4; ++j) {
            const int k = 4 * r + j;
            if (bg[j] != b1[k] || eg[j] != e1[k] || pg[j] != p1[k] || bg[j] != bc[j] || eg[j] != ec[j]) {
                ++bad;
                CHECK(0, "rank %d env %d on the GPU starts at bar %d (end %d), the single GPU run's env %d at %d (%d), "
                      "the CPU's rank %d env %d at %d (%d)", r, j, (int)bg[j], (int)eg[j], k, (int)b1[k], (int)e1[k],
                      r, j, (int)bc[j], (int)ec[j]);
            }
        }
        vp_trainer_free(&gpu);
        vp_trainer_free(&cpu);
    }
    printf("%-24s %-40s %11s %9d  %s\n", "rank envs", "rank r of 2 vs the single run's envs", "exact", bad,
           bad == 0 ? "ok" : "FAIL");
    vp_trainer_free(&one);
    vp_train_data_free(&d);
}

int main(void) {
    gpu_setup("test_gpu_dist");
    RUN_TEST(test_local_comm);
#ifdef VP_NCCL
    RUN_TEST(test_nccl_one_rank_in_graph);
#else
    printf("%-24s %-40s %11s %9s  %s\n", "comm nccl", "(this build has no NCCL)", "-", "-", "skipped");
#endif
    RUN_TEST(test_train_with_and_without);
#ifdef VP_NCCL
    RUN_TEST(test_train_nccl_one_rank);
#endif
    RUN_TEST(test_rank_envs);
    gpu_teardown();
    return vpt_finish();
}
