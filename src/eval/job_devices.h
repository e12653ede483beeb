/* Internal: which CUDA device each job of the job pool (job_pool.h) runs on. The devices are
 * run.devices ("" or "all": every visible device; else a comma list of device indices, in the
 * order jobs are dealt to them); slot i of the jobs that run at once goes to the next device
 * round robin that still has room, a device's room being the jobs its free memory holds (the
 * pool's memory rule, applied per device: one job is its measured bytes x1.25 plus 256 MiB, a
 * device holds 90 % of its free bytes over that). Pure functions: no CUDA call, so the CPU
 * tests cover every rule. */
#ifndef VP_EVAL_JOB_DEVICES_H
#define VP_EVAL_JOB_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/status.h"

/* Most devices one list names. */
#define VP_JOB_MAX_DEVICES 64

/* Reads device list `list` (run.devices; NULL, "" or "all": devices 0 .. n_visible-1) into
 * out[VP_JOB_MAX_DEVICES], *n their count; n_visible < 0 checks the list's form only (no index
 * is out of range; "all" gives no device). Refuses, naming run.devices and the item: no visible
 * device (n_visible 0), an item that is not a whole number >= 0, an empty item, an index >=
 * n_visible, an index given twice, more than VP_JOB_MAX_DEVICES items. */
vp_status vp_job_devices_parse(const char* list, int n_visible, int* out, int* n);

/* Margin added to a job's measured bytes: its backend (stream, cuBLASLt workspace), its backtest
 * and what training allocates later. */
#define VP_JOB_EXTRA_BYTES ((size_t)256 << 20)

/* The device bytes one job is counted as: `measured` (one algorithm instance) x1.25 plus
 * VP_JOB_EXTRA_BYTES. */
size_t vp_job_devices_job_bytes(size_t measured);

/* The jobs of job_bytes (> 0) each that free_bytes of a device hold: floor(0.9 free / job). */
int64_t vp_job_devices_room(size_t free_bytes, size_t job_bytes);

/* Places `slots` jobs at once on n_dev devices with free_bytes[n_dev] free (NULL: no memory
 * limit) and jobs of job_bytes each: dev_of[slots] receives each placed slot's device (an index
 * into the n_dev devices), *placed how many were placed. Slot i goes to the first device at or
 * after the one after slot i-1's (round robin) whose room (vp_job_devices_room) is not used up;
 * placing stops when every device is full, but slot 0 always goes to device 0 (one job runs
 * even where none fits, as on one device). Refuses slots < 1, n_dev < 1 or above
 * VP_JOB_MAX_DEVICES, and job_bytes 0 with a memory limit. */
vp_status vp_job_devices_assign(int64_t slots, int n_dev, const size_t* free_bytes, size_t job_bytes, int* dev_of,
                                int64_t* placed);

#endif /* VP_EVAL_JOB_DEVICES_H */
