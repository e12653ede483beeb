/* The walk-forward's fold pool: up to walkforward.parallel unfinished folds at once, each in its
 * own POSIX thread with its own backend (the calling thread works too, on the caller's backend).
 * On CUDA the number is lowered to what free device memory holds: one fold's algorithm instance
 * is made once as a probe and the device memory it took (cudaMemGetInfo before and after) is that
 * fold's size, taken x1.25 plus 256 MiB for its backend (stream, cuBLASLt workspace), the
 * backtest and what training allocates later; free memory x0.9 over that is the most folds.
 *
 * Thread safety of a fold: every object it touches is its own (backend, algorithm instance, RNG
 * streams seeded from the config, folder, metrics file) or read-only and shared (the config,
 * the bars, features and ATR of c->data, the fold plan). Process-wide state it meets: the
 * error message is thread-local (a worker's is copied out and raised again on the calling
 * thread); the log callback is only read (the callback must be thread-safe); the cache
 * folder's sequence counter is atomic; progress lines are written under flockfile. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/walkforward_impl.h"
#include "vulpes/algo.h"

#ifdef VP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* Margin added to a measured fold: its backend, its backtest and later allocations. */
#define FOLD_EXTRA_BYTES ((size_t)256 << 20)

/* What the workers share. */
typedef struct pool {
    vp_wf_ctx* c;
    pthread_mutex_t mu;
    int64_t next;              /* first fold not yet looked at */
    int64_t claimed;           /* folds started by this call */
    int stop_claims;           /* 1: no fold starts any more (one stopped or failed) */
    vp_status status;          /* first failure */
    char error[1024];          /* its message */
    unsigned char* finished;   /* [n_folds] */
    vp_wf_brief* briefs;       /* [n_folds] */
} pool;

/* One worker: its backend (NULL: make its own, freed at the end). */
typedef struct worker {
    pool* p;        /* the shared claims */
    vp_backend* b;  /* its backend (the caller's for worker 0) */
    int own;        /* 1: b was made by the worker */
    pthread_t th;   /* its thread (workers 1 ..) */
    int started;    /* 1: th runs */
    int64_t first;  /* the fold it starts with, claimed before any worker runs (-1: none) */
} worker;

/* A note on the progress stream (when progress is on), and in the log. */
static void note(vp_wf_ctx* c, const char* msg) {
    vp_log(VP_LOG_INFO, "walk-forward: %s", msg);
    vp_wf_progress_note(c, -1, msg);
}

/* Records a failure (the first one wins) and stops the folds in progress. */
static void fail(pool* p, vp_status s) {
    pthread_mutex_lock(&p->mu);
    if (p->status == VP_OK) {
        p->status = s;
        snprintf(p->error, sizeof p->error, "%s", vp_last_error());
    }
    p->stop_claims = 1;
    p->c->halt = 1;
    pthread_mutex_unlock(&p->mu);
}

/* The next unfinished fold to run, or -1 when none may start. */
static int64_t claim(pool* p) {
    vp_wf_ctx* c = p->c;
    int64_t k = -1;
    pthread_mutex_lock(&p->mu);
    const int64_t cap = c->opts->stop_after_folds;
    while (!p->stop_claims && p->next < c->n_folds && !(cap > 0 && p->claimed >= cap)) {
        const int64_t j = p->next++;
        if (vp_wf_fold_is_done(c, j)) continue;
        k = j;
        p->claimed++;
        break;
    }
    pthread_mutex_unlock(&p->mu);
    return k;
}

/* A worker's loop: make its backend, then run folds until none is left to claim. */
static void* work(void* arg) {
    worker* w = (worker*)arg;
    pool* p = w->p;
    if (!w->b) {
        const vp_backend_kind kind = vp_backend_get_kind(p->c->b);
        vp_status s = kind == VP_BACKEND_CUDA ? vp_backend_cuda_init(&w->b, 0) : vp_backend_cpu_init(&w->b);
        if (s != VP_OK) {
            fail(p, vp_error_context(s, "walk-forward: a fold thread's backend"));
            return NULL;
        }
        w->own = 1;
    }
    for (int64_t k = w->first; k >= 0 || (k = claim(p)) >= 0; k = -1) {
        int stopped = 0;
        vp_wf_brief brief;
        memset(&brief, 0, sizeof brief);
        vp_status s = vp_wf_fold_run(p->c, w->b, k, &stopped, &brief);
        if (s != VP_OK) {
            fail(p, s);
            break;
        }
        pthread_mutex_lock(&p->mu);
        if (stopped) p->stop_claims = 1;
        else p->finished[k] = 1, p->briefs[k] = brief;
        pthread_mutex_unlock(&p->mu);
        if (stopped) break;
    }
    return NULL;
}

/* Lowers *n to the folds free device memory holds (CUDA only), with a line saying so. */
static vp_status fit_memory(vp_wf_ctx* c, int64_t* n) {
#ifdef VP_HAVE_CUDA
    if (*n <= 1 || vp_backend_get_kind(c->b) != VP_BACKEND_CUDA) return VP_OK;
    // one fold's algorithm instance, made and freed, measured on the device
    size_t free0 = 0, free1 = 0, total = 0;
    VP_REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess, VP_ERR_CUDA, "walk-forward: cudaMemGetInfo failed");
    vp_train_data view = c->data;
    view.split = c->folds[0];
    vp_algo a;
    vp_status s = vp_algo_create(&a, &c->fold_cfg, c->b, &view, VP_ALGO_TRAIN);
    if (s == VP_OK && cudaMemGetInfo(&free1, &total) != cudaSuccess)
        s = vp_set_error(VP_ERR_CUDA, VP_WHERE, "walk-forward: cudaMemGetInfo failed");
    vp_algo_free(&a);
    if (s != VP_OK) return vp_error_context(s, "walk-forward: measuring one fold's device memory");
    const size_t used = free0 > free1 ? free0 - free1 : 0;
    const size_t fold = used + used / 4 + FOLD_EXTRA_BYTES;
    const int64_t fits = (int64_t)((double)free0 * 0.9 / (double)fold);
    char msg[256];
    const int64_t room = fits < 1 ? 1 : fits;
    snprintf(msg, sizeof msg, "a fold takes %.1f MiB of device memory (one instance %.1f MiB measured, + margin), "
             "%.1f MiB free: room for %lld %s at once, %lld asked", (double)fold / 1048576.0,
             (double)used / 1048576.0, (double)free0 / 1048576.0, (long long)room, vp_plural(room, "fold", "folds"),
             (long long)*n);
    note(c, msg);
    if (fits < *n) *n = fits < 1 ? 1 : fits;
#else
    (void)c, (void)n;
#endif
    return VP_OK;
}

vp_status vp_wf_pool_run(vp_wf_ctx* c, unsigned char* finished, vp_wf_brief* briefs) {
    // how many at once: the option, 1 with warm start, no more than the folds left, what memory holds
    const int64_t want = c->wf->parallel;
    int64_t n = want > 1 ? want : 1, left = 0;
    for (int64_t k = 0; k < c->n_folds; ++k) left += !vp_wf_fold_is_done(c, k);
    if (c->opts->stop_after_folds > 0 && left > c->opts->stop_after_folds) left = c->opts->stop_after_folds;
    if (n > 1 && c->wf->warm_start) {
        note(c, "warm start: folds run one after another (each starts from the previous one's parameters)");
        n = 1;
    }
    if (n > left) n = left > 0 ? left : 1;
    VP_TRY(vp_wf_progress_start(c, left));
    vp_status ms = fit_memory(c, &n);
    if (ms != VP_OK) {
        vp_wf_progress_stop(c);
        return ms;
    }
    if (n > 1) {
        char msg[96];
        snprintf(msg, sizeof msg, "%lld folds at once", (long long)n);
        note(c, msg);
    }

    // the workers: the calling thread on the caller's backend, n - 1 threads on their own
    pool p;
    memset(&p, 0, sizeof p);
    p.c = c, p.finished = finished, p.briefs = briefs, p.status = VP_OK;
    c->halt = 0;
    if (pthread_mutex_init(&p.mu, NULL) != 0) {
        vp_wf_progress_stop(c);
        VP_FAIL(VP_ERR_STATE, "walk-forward: pthread_mutex_init failed");
    }
    worker* w = (worker*)calloc((size_t)n, sizeof(worker));
    if (!w) {
        pthread_mutex_destroy(&p.mu);
        vp_wf_progress_stop(c);
        VP_FAIL(VP_ERR_OOM, "walk-forward: %lld fold workers", (long long)n);
    }
    // every worker's first fold is claimed here, before any runs, so the folds that start
    // together do not depend on thread timing (a stop request seen by one cannot keep another out)
    for (int64_t i = 0; i < n; ++i) w[i].p = &p, w[i].first = claim(&p);
    w[0].b = c->b;
    for (int64_t i = 1; i < n; ++i) {
        w[i].started = pthread_create(&w[i].th, NULL, work, &w[i]) == 0;
        if (!w[i].started) fail(&p, vp_set_error(VP_ERR_STATE, VP_WHERE, "walk-forward: pthread_create failed"));
    }
    work(&w[0]);
    for (int64_t i = 1; i < n; ++i) {
        if (w[i].started) pthread_join(w[i].th, NULL);
        if (w[i].own) vp_backend_free(w[i].b);
    }
    free(w);
    pthread_mutex_destroy(&p.mu);
    vp_wf_progress_stop(c);
    if (p.status != VP_OK) return vp_set_error(p.status, VP_WHERE, "%s", p.error);
    return VP_OK;
}
