/* The NCCL half of the communicator (builds with NCCL: VP_NCCL): the id made by rank 0 and
 * handed to the others through MPI (builds with MPI: VP_MPI, under mpirun) or the rendezvous
 * folder, the communicator on the backend's device, the all-reduce and the broadcast on its
 * stream. */
#ifdef VP_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef VP_MPI
#include <mpi.h>
#endif

#include "dist/dist_impl.h"

/* Checks an NCCL call, naming it and NCCL's reason. */
#define VP_NCCL_CHECK(call)                                                                            \
    do {                                                                                               \
        ncclResult_t vp_nc_r_ = (call);                                                                \
        if (vp_nc_r_ != ncclSuccess)                                                                   \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: %s failed: %s (%s)", __func__, #call,      \
                                ncclGetErrorString(vp_nc_r_), ncclGetLastError(NULL));                 \
    } while (0)

struct vp_comm_nccl {
    ncclComm_t comm; /* the NCCL communicator of this rank */
    int32_t* flag;   /* [1] device memory: vp_comm_nccl_max's value */
};

/* The rendezvous record: a tag, the run's size (a reader of another run's file refuses it)
 * and the id. */
typedef struct nccl_id_record {
    char magic[8];      /* "VPNCCLID" */
    int32_t size;       /* ranks of the run that wrote it */
    int32_t reserved;   /* 0 */
    ncclUniqueId id;    /* rank 0's ncclGetUniqueId */
} nccl_id_record;

/* Rank 0's id to every rank through the rendezvous folder. */
static vp_status id_by_file(const vp_dist* d, ncclUniqueId* id, double timeout_s) {
    const char* fn = "vp_comm_init";
    VP_REQUIRE(d->rendezvous[0] != '\0', VP_ERR_INVALID_ARG,
               "%s: %d ranks (from %s) need VULPES_RENDEZVOUS, a folder every rank can read, to pass rank 0's NCCL "
               "id (or a build with MPI under mpirun)", fn, d->size, vp_dist_source_name(d->source));
    nccl_id_record r;
    memset(&r, 0, sizeof r);
    if (d->rank == 0) {
        memcpy(r.magic, "VPNCCLID", 8);
        r.size = d->size;
        r.id = *id;
        return vp_rendezvous_publish(d->rendezvous, VP_RENDEZVOUS_NCCL_ID, &r, sizeof r);
    }
    VP_TRY(vp_rendezvous_wait(d->rendezvous, VP_RENDEZVOUS_NCCL_ID, &r, sizeof r, timeout_s));
    VP_REQUIRE(memcmp(r.magic, "VPNCCLID", 8) == 0, VP_ERR_PARSE, "%s: %s/%s is not an NCCL id record", fn,
               d->rendezvous, VP_RENDEZVOUS_NCCL_ID);
    VP_REQUIRE(r.size == d->size, VP_ERR_STATE, "%s: %s/%s was written by a run of %d ranks, this one has %d", fn,
               d->rendezvous, VP_RENDEZVOUS_NCCL_ID, (int)r.size, d->size);
    *id = r.id;
    return VP_OK;
}

#ifdef VP_MPI
/* Rank 0's id to every rank through MPI_Bcast (vp_mpi_join first). */
static vp_status id_by_mpi(const vp_dist* d, ncclUniqueId* id) {
    const char* fn = "vp_comm_init";
    VP_TRY(vp_mpi_join(fn, d));
    VP_REQUIRE(MPI_Bcast(id, (int)sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS, VP_ERR_STATE,
               "%s: MPI_Bcast of the NCCL id failed", fn);
    return VP_OK;
}
#endif

/* The id: rank 0 makes it, the others receive it (nobody else for one rank). */
static vp_status exchange_id(const vp_dist* d, ncclUniqueId* id, double timeout_s) {
    if (d->rank == 0) VP_NCCL_CHECK(ncclGetUniqueId(id));
    if (d->size == 1) return VP_OK;
#ifdef VP_MPI
    if (d->source == VP_DIST_OMPI || d->source == VP_DIST_PMI) return id_by_mpi(d, id);
#endif
    return id_by_file(d, id, timeout_s);
}

vp_status vp_comm_nccl_init(vp_comm_nccl** out, const vp_dist* d, vp_backend* b, double timeout_s) {
    (void)b; // the backend made its device current on this thread; NCCL binds to it
    vp_comm_nccl* n = (vp_comm_nccl*)calloc(1, sizeof *n);
    VP_REQUIRE(n != NULL, VP_ERR_OOM, "vp_comm_init: out of host memory");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    vp_status s = exchange_id(d, &id, timeout_s);
    if (s == VP_OK) {
        ncclResult_t r = ncclCommInitRank(&n->comm, d->size, id, d->rank);
        if (r != ncclSuccess)
            s = vp_set_error(VP_ERR_CUDA, VP_WHERE, "vp_comm_init: ncclCommInitRank(rank %d of %d) failed: %s (%s)",
                             d->rank, d->size, ncclGetErrorString(r), ncclGetLastError(NULL));
    }
    if (s != VP_OK) {
        vp_comm_nccl_free(n);
        return s;
    }
    *out = n;
    return VP_OK;
}

void vp_comm_nccl_free(vp_comm_nccl* n) {
    if (!n) return;
    if (n->comm) ncclCommDestroy(n->comm);
    if (n->flag) cudaFree(n->flag);
    free(n);
}

vp_status vp_comm_nccl_allreduce(vp_comm_nccl* n, float* x, size_t count, void* stream) {
    VP_NCCL_CHECK(ncclAllReduce(x, x, count, ncclFloat32, ncclSum, n->comm, (cudaStream_t)stream));
    return VP_OK;
}

vp_status vp_comm_nccl_broadcast(vp_comm_nccl* n, float* x, size_t count, int root, void* stream) {
    VP_NCCL_CHECK(ncclBroadcast(x, x, count, ncclFloat32, root, n->comm, (cudaStream_t)stream));
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    VP_REQUIRE(e == cudaSuccess, VP_ERR_CUDA, "vp_comm_broadcast: cudaStreamSynchronize failed: %s",
               cudaGetErrorString(e));
    return VP_OK;
}
vp_status vp_comm_nccl_max(vp_comm_nccl* n, int* v, void* stream) {
    const char* fn = "vp_comm_agree";
    cudaStream_t st = (cudaStream_t)stream;
    if (!n->flag) {
        cudaError_t e = cudaMalloc((void**)&n->flag, sizeof *n->flag);
        VP_REQUIRE(e == cudaSuccess, VP_ERR_CUDA, "%s: cudaMalloc of the flag failed: %s", fn, cudaGetErrorString(e));
    }
    int32_t x = (int32_t)*v;
    cudaError_t e = cudaMemcpyAsync(n->flag, &x, sizeof x, cudaMemcpyHostToDevice, st);
    VP_REQUIRE(e == cudaSuccess, VP_ERR_CUDA, "%s: cudaMemcpyAsync failed: %s", fn, cudaGetErrorString(e));
    VP_NCCL_CHECK(ncclAllReduce(n->flag, n->flag, 1, ncclInt32, ncclMax, n->comm, st));
    e = cudaMemcpyAsync(&x, n->flag, sizeof x, cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    VP_REQUIRE(e == cudaSuccess, VP_ERR_CUDA, "%s: reading the flag back failed: %s", fn, cudaGetErrorString(e));
    *v = (int)x;
    return VP_OK;
}
#endif /* VP_NCCL */
