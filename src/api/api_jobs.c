/* The flat C API's jobs: training (vp_train_run with the test span's files as its finishing
 * step, as `vulpes train` runs it) and the backtest job (vp_backtest_job_run, as `vulpes
 * backtest`), each writing a run folder whose path the caller gets. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "vulpes/backtest.h"
#include "vulpes/train.h"

/* The signal that asked a training run to stop (0: none); set by on_stop while vp_api_train runs. */
static volatile sig_atomic_t g_stop = 0;

static void on_stop(int sig) { g_stop = sig; }

/* Copies a folder's path to the caller's buffer, refusing one that does not fit. */
static vp_status give_dir(const char* dir, char* dst, int64_t cap) {
    if (!dst) return VP_OK;
    VP_REQUIRE(cap > 0 && (int64_t)strlen(dir) < cap, VP_ERR_INVALID_ARG,
               "the folder's path %.200s does not fit the %lld bytes given", dir, (long long)cap);
    memcpy(dst, dir, strlen(dir) + 1);
    return VP_OK;
}

/* The overrides given, then run.out and run.backend when given, into a new list *out [*n]. */
static vp_status train_overrides(const char* const* over, int n_over, const char* out_dir, const char* backend,
                                 char*** out, int* n, char* extra /* [2][1100] */) {
    VP_REQUIRE(n_over >= 0 && (n_over == 0 || over != NULL), VP_ERR_INVALID_ARG, "train: bad overrides");
    *out = (char**)calloc((size_t)n_over + 2, sizeof(char*));
    VP_REQUIRE(*out != NULL, VP_ERR_OOM, "train: out of memory");
    int k = 0;
    for (int i = 0; i < n_over; ++i) (*out)[k++] = (char*)over[i];
    if (out_dir) {
        VP_REQUIRE(strlen(out_dir) < 1000, VP_ERR_INVALID_ARG, "train: the run folder's path is too long");
        snprintf(extra, 1100, "run.out=%s", out_dir);
        (*out)[k++] = extra;
    }
    if (backend) {
        snprintf(extra + 1100, 1100, "run.backend=%.60s", backend);
        (*out)[k++] = extra + 1100;
    }
    *n = k;
    return VP_OK;
}

int vp_api_train(const char* config, const char* const* overrides, int n_overrides, const char* backend,
                 const char* out, int force, int progress, char* run_dir, int64_t cap) {
    char** over = NULL;
    int n = 0;
    char extra[2 * 1100];
    vp_status s = train_overrides(overrides, n_overrides, out, backend, &over, &n, extra);
    vp_config cfg;
    if (s == VP_OK) s = vp_config_resolve(&cfg, config, n, over);
    free(over);
    VP_TRY(s);
    static const char* const backends[VP_RUN_BACKEND_COUNT] = {"auto", "cpu", "cuda"};
    vp_backend* b = NULL;
    VP_TRY(vp_api_backend(backends[cfg.run.backend], &b));
    vp_train_opts o = vp_train_opts_default();
    o.progress = progress ? stderr : NULL;
    o.progress_tty = progress ? isatty(fileno(stderr)) : 0;
    o.progress_interval_s = o.progress_tty ? 0.25 : 10.0;
    o.mode = force ? VP_RUN_FORCE : VP_RUN_CREATE;
    o.config_path = config;
    vp_metrics_summary exact;
    memset(&exact, 0, sizeof exact);
    o.finish = vp_backtest_train_finish;
    o.ctx = &exact;
    // Ctrl-C and SIGTERM stop the run between iterations with a checkpoint, as in `vulpes train`;
    // the caller's handlers are back when the call returns
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    g_stop = 0;
    o.stop = &g_stop;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    vp_train_result r;
    s = vp_train_run(&cfg, b, &o, &r);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    vp_backend_free(b);
    VP_TRY(s);
    VP_TRY(give_dir(r.run_dir, run_dir, cap));
    VP_REQUIRE(!r.interrupted, VP_ERR_STATE, "training stopped by %s at iteration %lld: %s/last.safetensors holds "
               "the run; `vulpes train --resume %s` continues it", g_stop == SIGTERM ? "SIGTERM" : "Ctrl-C",
               (long long)r.count.iteration, r.run_dir, r.run_dir);
    return VP_OK;
}

int vp_api_backtest(const char* checkpoint, const char* data, const char* span, const char* from, const char* to,
                    int64_t segments, const char* const* overrides, int n_overrides, const char* backend,
                    const char* out, int force, char* out_dir, int64_t cap) {
    VP_REQUIRE(checkpoint != NULL, VP_ERR_INVALID_ARG, "backtest: the checkpoint is required");
    VP_REQUIRE(segments >= 1, VP_ERR_INVALID_ARG, "backtest: segments must be >= 1, got %lld", (long long)segments);
    VP_REQUIRE(n_overrides >= 0 && (n_overrides == 0 || overrides != NULL), VP_ERR_INVALID_ARG,
               "backtest: bad overrides");
    vp_backtest_job job;
    memset(&job, 0, sizeof job);
    job.checkpoint = checkpoint;
    job.data = data;
    job.span = span;
    job.from = from;
    job.to = to;
    job.out = out;
    job.force = force;
    job.n_windows = segments;
    job.fused = 1;
    job.n_overrides = n_overrides;
    job.overrides = (char* const*)overrides;
    vp_backend* b = NULL;
    VP_TRY(vp_api_backend(backend, &b));
    vp_rollout_result r;
    memset(&r, 0, sizeof r);
    char dir[1024];
    vp_status s = vp_backtest_job_run(b, &job, &r, dir, sizeof dir);
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    VP_TRY(s);
    return give_dir(dir, out_dir, cap);
}
