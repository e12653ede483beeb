/* Internal: the pool of self-contained training jobs that a walk-forward's folds and an
 * ablation's runs share. Up to `parallel` unfinished jobs run at once, each in its own POSIX
 * thread with its own backend (the calling thread works too, on the caller's backend); on
 * CUDA the jobs at once spread over the devices of `devices` (job_devices.h: round robin by
 * slot, each worker's backend made on its slot's device), as many on each device as its free
 * memory holds: one job's bytes are measured by making one algorithm instance of each probe
 * config (the largest counts) on the caller's backend, taken x1.25 plus 256 MiB for its backend
 * (stream, cuBLASLt workspace), the backtest and what training allocates later; a device's free
 * memory x0.9 over that is the most jobs on it. On the CPU every job runs on a CPU backend.
 *
 * Thread safety: the job callback is called from several threads at once for different jobs,
 * each with its own backend; the error message is thread-local (a worker's is copied out and
 * raised again on the calling thread). */
#ifndef VP_EVAL_JOB_POOL_H
#define VP_EVAL_JOB_POOL_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/config.h"
#include "vulpes/dataset.h"
#include "vulpes/status.h"

/* What the pool runs. */
typedef struct vp_job_pool {
    const char* name;                 /* the job's owner in messages ("walk-forward", "ablation") */
    const char* one;                  /* one job in messages ("fold", "run") */
    const char* many;                 /* several ("folds", "runs") */
    int64_t n_jobs;                   /* jobs 0 .. n_jobs-1, claimed in order */
    int64_t parallel;                 /* jobs at once asked for (>= 1) */
    int64_t stop_after;               /* claim no more once this many were claimed (0: no cap) */
    void* ctx;                        /* the first argument of the callbacks */
    /* Whether job k is already finished (skipped). */
    int (*is_done)(void* ctx, int64_t k);
    /* Runs job k on backend b; *stopped set when a stop request left it unfinished. */
    vp_status (*run)(void* ctx, vp_backend* b, int64_t k, int* stopped);
    /* A line about the pool (how many at once, the memory measured); may be NULL. */
    void (*note)(void* ctx, const char* msg);
    _Atomic int* halt;                /* set to 1 when a job failed, so the jobs in progress stop */
    const vp_config* const* probe_cfg; /* [n_probe] configs whose device memory is measured (CUDA) */
    const vp_train_data* const* probe_data; /* [n_probe] the data each is measured on */
    int n_probe;                      /* 0: no measurement, `parallel` is taken as asked */
    const char* devices;              /* CUDA: the devices the jobs spread over (run.devices; NULL: every visible) */
} vp_job_pool;

/* Checks run.devices `devices` for jobs on backend b before anything is made: on CUDA against the
 * visible devices (job_devices.h), on the CPU its form only (the CPU does not read it). */
vp_status vp_job_pool_check_devices(const char* devices, vp_backend* b);

/* Jobs not yet finished, no more than stop_after when it is set. */
int64_t vp_job_pool_left(const vp_job_pool* p);

/* Runs the unfinished jobs of p on backend b (and backends of the same kind made per thread, on
 * CUDA each on its slot's device; b serves the slot on b's own device), up to p->parallel at
 * once, no more than are left, lowered to what the devices' memory holds.
 * Every worker's first job is claimed before any runs, so which start together does not
 * depend on thread timing. Stops claiming once a job was stopped or failed, or stop_after
 * were claimed; a failure is returned after every running job has returned. */
vp_status vp_job_pool_run(const vp_job_pool* p, vp_backend* b);

#endif /* VP_EVAL_JOB_POOL_H */
