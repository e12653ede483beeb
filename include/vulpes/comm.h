/* vulpes: the communicator of a data-parallel run (docs/distributed.md).
 *
 * One communicator per rank, made from the rank's vp_dist and its backend. A run of one rank
 * needs no library: its all-reduce and broadcast do nothing, so one rank computes exactly what
 * the single process does. A run of more ranks talks through NCCL (a CUDA build with NCCL:
 * VP_NCCL), its id handed from rank 0 to the others through MPI (a build with MPI, launched
 * by mpirun) or through the shared rendezvous folder (VULPES_RENDEZVOUS); on the CPU backend
 * it talks through MPI (a build with MPI, under mpirun). */
#ifndef VULPES_COMM_H
#define VULPES_COMM_H

#include "vulpes/backend.h"
#include "vulpes/dist.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A rank's communicator (opaque). */
typedef struct vp_comm vp_comm;

/* What carries a communicator's collectives. */
typedef enum vp_comm_kind {
    VP_COMM_LOCAL = 0, /* one rank: every collective is a no-op */
    VP_COMM_NCCL,      /* NCCL on the backend's stream */
    VP_COMM_MPI,       /* MPI on host memory (the CPU backend under mpirun) */
    VP_COMM_KIND_COUNT
} vp_comm_kind;

/* Communicator options; vp_comm_opts_default fills them. */
typedef struct vp_comm_opts {
    int force_nccl;   /* 1: NCCL even for one rank (tests of the NCCL path on one GPU; 0) */
    double timeout_s; /* how long a rank waits for rank 0's id in the rendezvous folder (120 s) */
} vp_comm_opts;

/* The defaults: no forced NCCL, a 120 s rendezvous. */
vp_comm_opts vp_comm_opts_default(void);

/* Creates the communicator of rank d->rank of d->size on backend b into *out (opts may be
 * NULL: the defaults). Size 1 needs nothing; size > 1 needs the CUDA backend and a build with
 * NCCL, and MPI or d->rendezvous for the id; or the CPU backend and a build with MPI, run under
 * mpirun (MPI's rank and size must be d's); else VP_ERR_UNSUPPORTED naming what is missing. */
vp_status vp_comm_init(vp_comm** out, const vp_dist* d, vp_backend* b, const vp_comm_opts* opts);

/* Releases a communicator (NULL is a no-op). */
void vp_comm_free(vp_comm* c);

/* This rank (0 for NULL). */
int vp_comm_rank(const vp_comm* c);

/* Ranks in the run (1 for NULL). */
int vp_comm_size(const vp_comm* c);

/* What carries the collectives (VP_COMM_LOCAL for NULL). */
vp_comm_kind vp_comm_get_kind(const vp_comm* c);

/* The name of a kind ("local", "nccl", "mpi"); never NULL. */
const char* vp_comm_kind_name(vp_comm_kind k);

/* Sums x ([n] f32, the backend's memory) over the ranks, in place, on the backend's stream:
 * ops only, capturable into a graph (NCCL's ring order is fixed for a fixed rank count, so
 * the sum is deterministic). VP_COMM_MPI gathers the buffers to rank 0, adds them in rank
 * order and broadcasts the sum: bit-identical on every rank and from run to run. A no-op for
 * VP_COMM_LOCAL. */
vp_status vp_comm_allreduce_sum(vp_comm* c, vp_tensor* x);

/* Copies rank `root`'s x ([n] f32) into every rank's x, and waits for it: set-up only (rank
 * 0's parameters to all at init, so the ranks start equal). A no-op for VP_COMM_LOCAL. */
vp_status vp_comm_broadcast(vp_comm* c, vp_tensor* x, int root);

/* Host-level agreement: *flag becomes the largest of every rank's *flag, and waits for it
 * (the training loop's stop request, so every rank stops after the same iteration). Not
 * capturable. *flag unchanged for VP_COMM_LOCAL. */
vp_status vp_comm_agree_max(vp_comm* c, int* flag);

/* A rank that cannot go on: under MPI (a build with MPI, MPI initialised) MPI_Abort ends every
 * rank of the run with `code` and this call does not return; otherwise it returns, and the
 * launcher stops the other ranks when this one exits. */
void vp_comm_abort(vp_comm* c, int code);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_COMM_H */
