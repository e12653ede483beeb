/* The pool of training jobs (job_pool.h): claims in job order under a mutex, one worker per
 * thread on its own backend, on CUDA the workers dealt over the devices and their number fitted
 * to each device's free memory. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_devices.h"
#include "eval/job_pool.h"
#include "vulpes/algo.h"

#ifdef VP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* What the workers share. */
typedef struct pool {
    const vp_job_pool* j;
    pthread_mutex_t mu;
    int64_t next;      /* first job not yet looked at */
    int64_t claimed;   /* jobs started by this call */
    int stop_claims;   /* 1: no job starts any more (one stopped or failed) */
    vp_status status;  /* first failure */
    char error[1024];  /* its message */
} pool;

/* One worker: its backend (NULL: make its own, freed at the end). */
typedef struct worker {
    pool* p;        /* the shared claims */
    vp_backend* b;  /* its backend (the caller's for worker 0) */
    vp_backend_kind kind; /* the kind of backend a worker makes */
    int device;     /* CUDA: the device it makes its backend on */
    int own;        /* 1: b was made by the worker */
    pthread_t th;   /* its thread (workers 1 ..) */
    int started;    /* 1: th runs */
    int64_t first;  /* the job it starts with, claimed before any worker runs (-1: none) */
} worker;

/* A line about the pool (when the owner takes them). */
static void note(const vp_job_pool* j, const char* msg) {
    if (j->note) j->note(j->ctx, msg);
}

/* Records a failure (the first one wins) and stops the jobs in progress. */
static void fail(pool* p, vp_status s) {
    pthread_mutex_lock(&p->mu);
    if (p->status == VP_OK) {
        p->status = s;
        snprintf(p->error, sizeof p->error, "%s", vp_last_error());
    }
    p->stop_claims = 1;
    if (p->j->halt) *p->j->halt = 1;
    pthread_mutex_unlock(&p->mu);
}

/* The next unfinished job to run, or -1 when none may start. */
static int64_t claim(pool* p) {
    const vp_job_pool* j = p->j;
    int64_t k = -1;
    pthread_mutex_lock(&p->mu);
    while (!p->stop_claims && p->next < j->n_jobs && !(j->stop_after > 0 && p->claimed >= j->stop_after)) {
        const int64_t i = p->next++;
        if (j->is_done(j->ctx, i)) continue;
        k = i;
        p->claimed++;
        break;
    }
    pthread_mutex_unlock(&p->mu);
    return k;
}

/* A worker's loop: make its backend, then run jobs until none is left to claim. */
static void* work(void* arg) {
    worker* w = (worker*)arg;
    pool* p = w->p;
    if (!w->b) {
        vp_status s = w->kind == VP_BACKEND_CUDA ? vp_backend_cuda_init(&w->b, w->device) : vp_backend_cpu_init(&w->b);
        if (s != VP_OK) {
            fail(p, vp_error_context(s, "%s: a %s thread's backend", p->j->name, p->j->one));
            return NULL;
        }
        w->own = 1;
    }
    for (int64_t k = w->first; k >= 0 || (k = claim(p)) >= 0; k = -1) {
        int stopped = 0;
        vp_status s = p->j->run(p->j->ctx, w->b, k, &stopped);
        if (s != VP_OK) {
            fail(p, s);
            break;
        }
        if (stopped) {
            pthread_mutex_lock(&p->mu);
            p->stop_claims = 1;
            pthread_mutex_unlock(&p->mu);
            break;
        }
    }
    return NULL;
}

/* The CUDA device a backend runs on (its name "cuda:N ..."; 0 when it says none). */
static int backend_device(const vp_backend* b) {
    int d = 0;
    return sscanf(vp_backend_name(b), "cuda:%d", &d) == 1 && d >= 0 ? d : 0;
}

#ifdef VP_HAVE_CUDA
/* The bytes one job takes on the device of b: one algorithm instance of each probe config made
 * and freed (the largest counts, *used), counted by vp_job_devices_job_bytes; *free0 the free
 * bytes before. */
static vp_status job_bytes(const vp_job_pool* j, vp_backend* b, size_t* one, size_t* used, size_t* free0) {
    size_t free1 = 0, total = 0;
    *used = 0;
    VP_REQUIRE(cudaMemGetInfo(free0, &total) == cudaSuccess, VP_ERR_CUDA, "%s: cudaMemGetInfo failed", j->name);
    for (int i = 0; i < j->n_probe; ++i) {
        vp_algo a;
        vp_status s = vp_algo_create(&a, j->probe_cfg[i], b, j->probe_data[i], VP_ALGO_TRAIN);
        if (s == VP_OK && cudaMemGetInfo(&free1, &total) != cudaSuccess)
            s = vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: cudaMemGetInfo failed", j->name);
        vp_algo_free(&a);
        if (s != VP_OK) return vp_error_context(s, "%s: measuring one %s's device memory", j->name, j->one);
        if (*free0 > free1 && *free0 - free1 > *used) *used = *free0 - free1;
    }
    *one = vp_job_devices_job_bytes(*used);
    return VP_OK;
}

/* One job's bytes into *one and the free bytes of each device of devs[n_dev] into free_bytes[n_dev]
 * (the device of b measured on b before its probe, the others read), a line per device with the
 * jobs it holds. */
static vp_status device_memory(const vp_job_pool* j, vp_backend* b, const int* devs, int n_dev, int64_t asked,
                               size_t* one, size_t* free_bytes) {
    size_t used = 0, free_b = 0, total = 0;
    VP_TRY(job_bytes(j, b, one, &used, &free_b));
    const int home = backend_device(b);
    vp_status s = VP_OK;
    for (int i = 0; i < n_dev && s == VP_OK; ++i) {
        size_t fr = free_b;
        if (devs[i] != home && (cudaSetDevice(devs[i]) != cudaSuccess || cudaMemGetInfo(&fr, &total) != cudaSuccess))
            s = vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: reading the free memory of CUDA device %d failed", j->name,
                             devs[i]);
        if (s != VP_OK) break;
        free_bytes[i] = fr;
        const int64_t room = vp_job_devices_room(fr, *one);
        char msg[320];
        snprintf(msg, sizeof msg, "a %s takes %.1f MiB of device memory (one instance %.1f MiB measured, + margin), "
                 "%.1f MiB free on cuda:%d: room for %lld %s at once, %lld asked", j->one, (double)*one / 1048576.0,
                 (double)used / 1048576.0, (double)fr / 1048576.0, devs[i], (long long)room,
                 vp_plural(room, j->one, j->many), (long long)asked);
        note(j, msg);
    }
    (void)cudaSetDevice(home);
    (void)cudaGetLastError();
    return s;
}
#endif

/* The device of each of the *n workers into dev_of[*n] (CUDA): run.devices read against the
 * visible devices, each one's room measured when more than one job runs, the slots dealt round
 * robin (job_devices.h); *n lowered to the slots placed, with a line naming each slot's device
 * (none for one job on the caller's device). On the CPU every worker stays on the CPU. */
static vp_status plan_devices(const vp_job_pool* j, vp_backend* b, int64_t* n, int* dev_of) {
    for (int64_t i = 0; i < *n; ++i) dev_of[i] = 0;
#ifdef VP_HAVE_CUDA
    if (vp_backend_get_kind(b) != VP_BACKEND_CUDA) return VP_OK;
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0, (void)cudaGetLastError();
    int devs[VP_JOB_MAX_DEVICES], n_dev = 0;
    vp_status s = vp_job_devices_parse(j->devices, visible, devs, &n_dev);
    if (s != VP_OK) return vp_error_context(s, "%s", j->name);
    size_t free_bytes[VP_JOB_MAX_DEVICES], one = 0;
    const int measure = *n > 1 && j->n_probe > 0;
    if (measure) VP_TRY(device_memory(j, b, devs, n_dev, *n, &one, free_bytes));
    int64_t placed = 0;
    VP_TRY(vp_job_devices_assign(*n, n_dev, measure ? free_bytes : NULL, one, dev_of, &placed));
    for (int64_t i = 0; i < placed; ++i) dev_of[i] = devs[dev_of[i]];
    *n = placed;
    // "devices of the 3 folds at once: cuda:0, cuda:1, cuda:0" (one job on the caller's device: no line)
    if (placed == 1 && dev_of[0] == backend_device(b)) return VP_OK;
    char msg[512];
    int len = snprintf(msg, sizeof msg, "devices of the %lld %s at once:", (long long)placed,
                       vp_plural(placed, j->one, j->many));
    int64_t i = 0;
    for (; i < placed && len > 0 && len < (int)sizeof msg - 24; ++i)
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s cuda:%d", i ? "," : "", dev_of[i]);
    if (i < placed && len > 0 && len < (int)sizeof msg - 8) snprintf(msg + len, sizeof msg - (size_t)len, ", ...");
    note(j, msg);
#else
    (void)j, (void)b, (void)n;
#endif
    return VP_OK;
}

vp_status vp_job_pool_check_devices(const char* devices, vp_backend* b) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "vp_job_pool_check_devices: NULL backend");
    int visible = -1;
#ifdef VP_HAVE_CUDA
    if (vp_backend_get_kind(b) == VP_BACKEND_CUDA && cudaGetDeviceCount(&visible) != cudaSuccess)
        visible = 0, (void)cudaGetLastError();
#endif
    int devs[VP_JOB_MAX_DEVICES], n = 0;
    return vp_job_devices_parse(devices, visible, devs, &n);
}

int64_t vp_job_pool_left(const vp_job_pool* j) {
    int64_t left = 0;
    for (int64_t k = 0; k < j->n_jobs; ++k) left += !j->is_done(j->ctx, k);
    if (j->stop_after > 0 && left > j->stop_after) left = j->stop_after;
    return left;
}

vp_status vp_job_pool_run(const vp_job_pool* j, vp_backend* b) {
    VP_REQUIRE(j != NULL && b != NULL && j->is_done && j->run, VP_ERR_INVALID_ARG, "vp_job_pool_run: NULL argument");
    // how many at once: the option, no more than the jobs left, what memory holds
    const int64_t left = vp_job_pool_left(j);
    int64_t n = j->parallel > 1 ? j->parallel : 1;
    if (n > left) n = left > 0 ? left : 1;
    int* dev_of = (int*)calloc((size_t)n, sizeof(int));
    VP_REQUIRE(dev_of != NULL, VP_ERR_OOM, "%s: %lld %s devices", j->name, (long long)n, j->one);
    vp_status ps = plan_devices(j, b, &n, dev_of);
    if (ps != VP_OK) {
        free(dev_of);
        return ps;
    }
    if (n > 1) {
        char msg[96];
        snprintf(msg, sizeof msg, "%lld %s at once", (long long)n, j->many);
        note(j, msg);
    }

    // the workers: the calling thread on the caller's backend, n - 1 threads on their own
    pool p;
    memset(&p, 0, sizeof p);
    p.j = j, p.status = VP_OK;
    if (j->halt) *j->halt = 0;
    VP_REQUIRE(pthread_mutex_init(&p.mu, NULL) == 0, VP_ERR_STATE, "%s: pthread_mutex_init failed", j->name);
    worker* w = (worker*)calloc((size_t)n, sizeof(worker));
    if (!w) {
        free(dev_of);
        pthread_mutex_destroy(&p.mu);
        VP_FAIL(VP_ERR_OOM, "%s: %lld %s workers", j->name, (long long)n, j->one);
    }
    // every worker's first job is claimed here, before any runs, so the jobs that start
    // together do not depend on thread timing (a stop request seen by one cannot keep another out)
    const vp_backend_kind kind = vp_backend_get_kind(b);
    for (int64_t i = 0; i < n; ++i) w[i].p = &p, w[i].first = claim(&p), w[i].kind = kind, w[i].device = dev_of[i];
    free(dev_of);
    // the caller's backend serves the first worker when it is on that worker's device
    if (kind != VP_BACKEND_CUDA || w[0].device == backend_device(b)) w[0].b = b;
    for (int64_t i = 1; i < n; ++i) {
        w[i].started = pthread_create(&w[i].th, NULL, work, &w[i]) == 0;
        if (!w[i].started) fail(&p, vp_set_error(VP_ERR_STATE, VP_WHERE, "%s: pthread_create failed", j->name));
    }
    work(&w[0]);
    for (int64_t i = 1; i < n; ++i)
        if (w[i].started) pthread_join(w[i].th, NULL);
    for (int64_t i = 0; i < n; ++i)
        if (w[i].own) vp_backend_free(w[i].b);
    free(w);
#ifdef VP_HAVE_CUDA
    // the calling thread back on the caller's device (a worker of its own there may have moved it)
    if (kind == VP_BACKEND_CUDA) (void)cudaSetDevice(backend_device(b)), (void)cudaGetLastError();
#endif
    pthread_mutex_destroy(&p.mu);
    if (p.status != VP_OK) return vp_set_error(p.status, VP_WHERE, "%s", p.error);
    return VP_OK;
}
