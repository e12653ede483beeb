/* GPU test: walk-forward folds spread over the visible CUDA devices (run.devices, the job pool's
 * device rule, src/eval/job_devices.h).
 * - 2 folds per device at once (over every visible device): each fold's metrics.jsonl names the
 *   device round robin gives its slot (fold k started on device k mod D), the pool's line lists
 *   the devices, each fold's first line names its backend, and the stitched curve and every
 *   fold's trades equal one fold at a time on device 0, bit for bit;
 * - run.devices naming only the last device: every fold runs there;
 * - a device index out of range is refused with the count of visible devices.
 * With one GPU it checks the same on that one. Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L
#include "test_data_util.h"
#include "test_job_util.h"
#include "vp_test.h"
#include "vulpes/walkforward.h"

enum { FOLDS = 6 };

/* The visible CUDA devices: backends made on 0, 1, ... until one is refused. */
static int count_devices(void) {
    int n = 0;
    for (vp_backend* b = NULL; n < 64 && vp_backend_cuda_init(&b, n) == VP_OK; ++n) vp_backend_free(b);
    return n;
}

/* The device fold k (1-based) of walk-forward folder d trained on (its metrics.jsonl's backend
 * "cuda:N ..."), -1 when it names none. */
static int fold_device(const char* d, int k) {
    char fd[400];
    snprintf(fd, sizeof fd, "%s/folds/fold_%03d", d, k);
    char* m = vpt_read_file(fd, "metrics.jsonl", NULL);
    const char* q = m ? strstr(m, "\"backend\":\"cuda:") : NULL;
    int dev = -1;
    if (q && sscanf(q, "\"backend\":\"cuda:%d", &dev) != 1) dev = -1;
    free(m);
    return dev;
}

/* Runs the walk-forward of cfg on a CUDA backend of device 0 into root/name, progress into *log. */
static vp_status run_wf(const vp_config* cfg, const char* root, const char* name, FILE* log, vp_wf_result* r) {
    memset(r, 0, sizeof *r);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    vp_backend* b = NULL;
    VP_TRY(vp_backend_cuda_init(&b, 0));
    vp_wf_opts o = {dir, VP_RUN_CREATE, log, NULL, 0, 1, 0, 0};
    vp_status s = vp_walkforward_run(cfg, b, &o, r);
    vp_backend_free(b);
    return s;
}

/* Counts the lines of the log that contain `needle`. */
static int count_lines(FILE* log, const char* needle) {
    char line[2048];
    int n = 0;
    rewind(log);
    while (fgets(line, sizeof line, log)) n += strstr(line, needle) != NULL;
    return n;
}

static void test_spread(void) {
    const int D = count_devices();
    CHECK(D >= 1, "no CUDA device");
    if (D < 1) return;
    printf("visible CUDA devices: %d\n", D);
    char root[256];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    vp_config cfg;
    vpt_job_tiny_config(&cfg);
    vpt_fold_cfg(&cfg, 211, 67, 53, 1, FOLDS);
    cfg.run.backend = VP_RUN_BACKEND_CUDA;

    // the reference: one fold at a time on device 0
    vp_config c1 = cfg;
    snprintf(c1.run.devices, sizeof c1.run.devices, "0");
    vp_wf_result r1;
    CHECK_OK(run_wf(&c1, root, "one", NULL, &r1));

    // two folds per device at once over every device (at most the folds)
    vp_config cp = cfg;
    cp.walkforward.parallel = 2 * D < FOLDS ? 2 * D : FOLDS;
    FILE* log = tmpfile();
    vp_wf_result rp;
    CHECK_OK(run_wf(&cp, root, "spread", log, &rp));
    char dir[400];
    snprintf(dir, sizeof dir, "%s/spread", root);
    int used[64] = {0};
    for (int k = 1; k <= FOLDS; ++k) {
        const int dev = fold_device(dir, k);
        CHECK(dev >= 0 && dev < D, "fold %d: device %d", k, dev);
        if (dev >= 0 && dev < 64) used[dev]++;
        // the first folds start together, one per slot: slot k-1 on device (k-1) mod D
        if (k <= cp.walkforward.parallel)
            CHECK(dev == (k - 1) % D, "fold %d started on device %d, round robin gives %d", k, dev, (k - 1) % D);
    }
    for (int d = 0; d < D && d < FOLDS; ++d) CHECK(used[d] > 0, "device %d ran no fold", d);
    if (log) {
        char want[64];
        snprintf(want, sizeof want, "walk-forward: devices of the %lld folds at once: cuda:0",
                 (long long)cp.walkforward.parallel);
        CHECK(count_lines(log, want) == 1, "no line '%s'", want);
        CHECK(count_lines(log, ", on cuda:") == FOLDS, "%d fold lines name their device, expected %d",
              count_lines(log, ", on cuda:"), FOLDS);
        fclose(log);
    }
    // the same results as one at a time on one device
    CHECK(rp.n_done == FOLDS && rp.n_curve == r1.n_curve, "%lld folds, %lld points (reference %lld)",
          (long long)rp.n_done, (long long)rp.n_curve, (long long)r1.n_curve);
    if (rp.n_curve == r1.n_curve) {
        int64_t first = -1;
        for (int64_t i = 0; i < rp.n_curve && first < 0; ++i)
            if (rp.equity[i] != r1.equity[i] || rp.position[i] != r1.position[i]) first = i;
        CHECK(first < 0, "the stitched curve differs from point %lld (fold %d): equity %.17g vs %.17g", (long long)first,
              first >= 0 ? rp.fold[first] : 0, first >= 0 ? rp.equity[first] : 0.0, first >= 0 ? r1.equity[first] : 0.0);
    }
    char f1[400], f2[400];
    for (int k = 1; k <= FOLDS; ++k) {
        snprintf(f1, sizeof f1, "%s/one/folds/fold_%03d", root, k);
        snprintf(f2, sizeof f2, "%s/spread/folds/fold_%03d", root, k);
        CHECK(vpt_same_file(f1, f2, "trades.csv"), "fold %d: trades.csv differs from one at a time on device 0", k);
    }
    vp_wf_result_free(&rp);

    // only the last device
    vp_config cl = cfg;
    cl.walkforward.parallel = 2;
    snprintf(cl.run.devices, sizeof cl.run.devices, "%d", D - 1);
    vp_wf_result rl;
    CHECK_OK(run_wf(&cl, root, "last", NULL, &rl));
    snprintf(dir, sizeof dir, "%s/last", root);
    for (int k = 1; k <= FOLDS; ++k)
        CHECK(fold_device(dir, k) == D - 1, "run.devices=%d: fold %d on device %d", D - 1, k, fold_device(dir, k));
    vp_wf_result_free(&rl);
    vp_wf_result_free(&r1);

    // out of range: refused before a fold runs
    vp_config co = cfg;
    co.walkforward.parallel = 2;
    snprintf(co.run.devices, sizeof co.run.devices, "0,%d", D);
    vp_wf_result ro;
    char msg[160];
    snprintf(msg, sizeof msg, "device %d is out of range: %d CUDA device", D, D);
    CHECK_STATUS(run_wf(&co, root, "bad", NULL, &ro), VP_ERR_INVALID_ARG, msg);
    vp_wf_result_free(&ro);
    snprintf(dir, sizeof dir, "%s/bad", root);
    FILE* made = fopen(dir, "r");
    CHECK(made == NULL, "a refused run.devices left the folder %s", dir);
    if (made) fclose(made);
    printf("%-24s %-40s %11s %9s  %s\n", "job_devices", "walk-forward over the devices", "bitwise", "0",
           vpt_checks_failed ? "FAIL" : "ok");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN_TEST(test_spread);
    return vpt_finish();
}
