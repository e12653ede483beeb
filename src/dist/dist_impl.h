/* Internal: the file rendezvous of the dist layer (a rank publishes a small record into a
 * shared folder, the others wait for it) and the NCCL half of the communicator. */
#ifndef VP_DIST_IMPL_H
#define VP_DIST_IMPL_H

#include <stddef.h>

#include "vulpes/comm.h"

/* Writes data[n] as dir/name: to dir/name.tmp.PID first, then renamed, so a reader sees the
 * whole file or none. Refuses when dir/name already exists (a stale record of an earlier run:
 * the message says to empty the folder). */
vp_status vp_rendezvous_publish(const char* dir, const char* name, const void* data, size_t n);

/* Waits up to timeout_s seconds for dir/name, polling every 10 ms, and reads exactly n bytes
 * of it into data[n]; a file of another size is refused by name, a timeout names the folder,
 * the file and the wait. */
vp_status vp_rendezvous_wait(const char* dir, const char* name, void* data, size_t n, double timeout_s);

/* The file the NCCL id goes through in the rendezvous folder. */
#define VP_RENDEZVOUS_NCCL_ID "nccl-id"

#ifdef VP_NCCL
/* The NCCL state of a communicator (comm_nccl.c). */
typedef struct vp_comm_nccl vp_comm_nccl;

/* Bootstraps NCCL for rank d->rank of d->size (nranks 1 when d->size is 1 and forced) on the
 * backend's device: the id through MPI or the rendezvous folder. */
vp_status vp_comm_nccl_init(vp_comm_nccl** out, const vp_dist* d, vp_backend* b, double timeout_s);

/* Releases the NCCL state (NULL is a no-op). */
void vp_comm_nccl_free(vp_comm_nccl* n);

/* ncclAllReduce sum of f32 x[count] in place on stream. */
vp_status vp_comm_nccl_allreduce(vp_comm_nccl* n, float* x, size_t count, void* stream);

/* ncclBroadcast of f32 x[count] from root on stream, then a wait on the stream. */
vp_status vp_comm_nccl_broadcast(vp_comm_nccl* n, float* x, size_t count, int root, void* stream);
#endif

#ifdef VP_MPI
/* Joins MPI as rank d->rank of d->size: MPI initialised when nobody has (then finalised at
 * exit, once: MPI may be initialised once per process), then MPI's rank and size checked
 * against the environment's (VP_ERR_STATE naming both; fn names the caller). */
vp_status vp_mpi_join(const char* fn, const vp_dist* d);

/* The MPI state of a CPU communicator (comm_mpi.c). */
typedef struct vp_comm_mpi vp_comm_mpi;

/* MPI for rank d->rank of d->size (vp_mpi_join). */
vp_status vp_comm_mpi_init(vp_comm_mpi** out, const vp_dist* d);

/* Releases the MPI state (NULL is a no-op; MPI itself stays up until exit). */
void vp_comm_mpi_free(vp_comm_mpi* m);

/* Sums host x[count] over the ranks in place: gathered to rank 0, added in rank order, broadcast. */
vp_status vp_comm_mpi_allreduce(vp_comm_mpi* m, float* x, size_t count);

/* MPI_Bcast of host x[count] from root. */
vp_status vp_comm_mpi_broadcast(vp_comm_mpi* m, float* x, size_t count, int root);

/* *v becomes the largest of every rank's *v. */
vp_status vp_comm_mpi_max(vp_comm_mpi* m, int* v);

/* MPI_Abort(MPI_COMM_WORLD, code) when MPI is up (else returns). */
void vp_comm_mpi_abort(int code);
#endif

#ifdef VP_NCCL
/* *v becomes the largest of every rank's *v (ncclMax of one int on stream, waited for). */
vp_status vp_comm_nccl_max(vp_comm_nccl* n, int* v, void* stream);
#endif

#endif /* VP_DIST_IMPL_H */
