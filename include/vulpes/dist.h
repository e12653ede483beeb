/* vulpes: where a process stands in a data-parallel run (docs/distributed.md).
 *
 * A run of N ranks is one process per GPU. Each process learns its rank and the run's size
 * from its environment: the variables vulpes's own launcher sets (`vulpes train --gpus N`),
 * else Open MPI's, else MPICH's / PMI's; with none of them it is the single process of
 * today. Every inconsistency is an error naming the variable and its value. */
#ifndef VULPES_DIST_H
#define VULPES_DIST_H

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest rendezvous folder path, terminator included. */
#define VP_DIST_PATH_MAX 1024

/* Where a process's rank and size came from. */
typedef enum vp_dist_source {
    VP_DIST_SINGLE = 0, /* no rank variable set: one process, rank 0 of 1 */
    VP_DIST_VULPES,     /* VULPES_RANK, VULPES_WORLD_SIZE, VULPES_LOCAL_RANK, VULPES_LOCAL_SIZE */
    VP_DIST_OMPI,       /* OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (Open MPI's mpirun) */
    VP_DIST_PMI,        /* PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (MPICH's Hydra) */
    VP_DIST_SOURCE_COUNT
} vp_dist_source;

/* A process's place in the run. */
typedef struct vp_dist {
    int rank;                              /* this process, 0 .. size - 1 */
    int size;                              /* processes in the run, >= 1 */
    int local_rank;                        /* this process on its machine, 0 .. local_size - 1: its GPU */
    int local_size;                        /* processes on this machine, 1 .. size */
    vp_dist_source source;                 /* which variables gave them */
    char rendezvous[VP_DIST_PATH_MAX];     /* VULPES_RENDEZVOUS: the shared folder of the NCCL id ("" when unset) */
} vp_dist;

/* Reads one environment variable: its value, or NULL when unset. `ctx` is the caller's. */
typedef const char* (*vp_dist_getenv_fn)(void* ctx, const char* name);

/* Fills *d from the variables `get` returns (the first source of VULPES, OMPI, PMI that has
 * its rank or size set; a local rank or size that is absent defaults to the global one). The
 * message of a failure names the variable and its value: not a whole number, rank >= size,
 * size < 1, a rank without a size (or a size without a rank), local_rank >= local_size,
 * local_size > size or < 1, local_rank > rank, a rendezvous path too long. */
vp_status vp_dist_from(vp_dist* d, vp_dist_getenv_fn get, void* ctx);

/* vp_dist_from over the process's environment (getenv). */
vp_status vp_dist_from_env(vp_dist* d);

/* The single process: rank 0 of 1, source VP_DIST_SINGLE. */
vp_dist vp_dist_single(void);

/* The name of a source ("vulpes", "openmpi", "pmi", "single"); never NULL. */
const char* vp_dist_source_name(vp_dist_source s);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DIST_H */
