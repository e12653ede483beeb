/* The communicator: one rank's no-op collectives, or NCCL's (comm_nccl.c) or MPI's on the CPU
 * (comm_mpi.c) for a run of more ranks; the argument checks they share. */
#include <stdlib.h>
#include <string.h>

#include "backend/kit.h"
#include "dist/dist_impl.h"

struct vp_comm {
    vp_comm_kind kind; /* what carries the collectives */
    int rank;          /* this rank */
    int size;          /* ranks in the run */
    vp_backend* b;     /* the backend whose stream the collectives run on */
#ifdef VP_NCCL
    vp_comm_nccl* nccl; /* VP_COMM_NCCL: the NCCL communicator */
#endif
#ifdef VP_MPI
    vp_comm_mpi* mpi; /* VP_COMM_MPI: the MPI state */
#endif
};

vp_comm_opts vp_comm_opts_default(void) {
    vp_comm_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_s = 120.0;
    return o;
}

vp_status vp_comm_init(vp_comm** out, const vp_dist* d, vp_backend* b, const vp_comm_opts* opts) {
    const char* fn = "vp_comm_init";
    VP_REQUIRE(out != NULL && d != NULL && b != NULL, VP_ERR_INVALID_ARG, "%s: out, dist or backend is NULL", fn);
    *out = NULL;
    const vp_comm_opts o = opts ? *opts : vp_comm_opts_default();
    VP_REQUIRE(d->size >= 1 && d->rank >= 0 && d->rank < d->size, VP_ERR_INVALID_ARG, "%s: rank %d of %d", fn,
               d->rank, d->size);
    const int cpu = vp_backend_get_kind(b) == VP_BACKEND_CPU;
    // more CPU ranks: MPI's collectives on host memory
    const int mpi = d->size > 1 && cpu;
    if (mpi) {
#ifndef VP_MPI
        VP_FAIL(VP_ERR_UNSUPPORTED,
                "%s: %d ranks on the CPU backend need a build with MPI (CMake's find_package(MPI) found none; "
                "install libopenmpi-dev) run under mpirun; rank %d of %d from %s", fn, d->size, d->rank, d->size,
                vp_dist_source_name(d->source));
#endif
    }
    const int nccl = !mpi && (d->size > 1 || o.force_nccl);
    // a run of more ranks: the CUDA backend and a build with NCCL
    if (nccl) {
        VP_REQUIRE(vp_backend_get_kind(b) == VP_BACKEND_CUDA, VP_ERR_UNSUPPORTED,
                   "%s: %d ranks need the CUDA backend (NCCL), not %s", fn, d->size, vp_backend_name(b));
#ifndef VP_NCCL
        VP_FAIL(VP_ERR_UNSUPPORTED,
                "%s: this build has no NCCL, so it runs one rank only (rank %d of %d from %s); rebuild with nccl.h "
                "and libnccl found by CMake", fn, d->rank, d->size, vp_dist_source_name(d->source));
#endif
    }
    vp_comm* c = (vp_comm*)calloc(1, sizeof *c);
    VP_REQUIRE(c != NULL, VP_ERR_OOM, "%s: out of host memory", fn);
    c->kind = mpi ? VP_COMM_MPI : nccl ? VP_COMM_NCCL : VP_COMM_LOCAL;
    c->rank = d->rank;
    c->size = d->size;
    c->b = b;
#ifdef VP_NCCL
    if (nccl) {
        vp_status s = vp_comm_nccl_init(&c->nccl, d, b, o.timeout_s);
        if (s != VP_OK) {
            free(c);
            return s;
        }
    }
#endif
#ifdef VP_MPI
    if (mpi) {
        vp_status s = vp_comm_mpi_init(&c->mpi, d);
        if (s != VP_OK) {
            free(c);
            return s;
        }
    }
#endif
    *out = c;
    return VP_OK;
}

void vp_comm_free(vp_comm* c) {
    if (!c) return;
#ifdef VP_NCCL
    vp_comm_nccl_free(c->nccl);
#endif
#ifdef VP_MPI
    vp_comm_mpi_free(c->mpi);
#endif
    free(c);
}

int vp_comm_rank(const vp_comm* c) {
    return c ? c->rank : 0;
}

int vp_comm_size(const vp_comm* c) {
    return c ? c->size : 1;
}

vp_comm_kind vp_comm_get_kind(const vp_comm* c) {
    return c ? c->kind : VP_COMM_LOCAL;
}

const char* vp_comm_kind_name(vp_comm_kind k) {
    switch (k) {
    case VP_COMM_LOCAL: return "local";
    case VP_COMM_NCCL: return "nccl";
    case VP_COMM_MPI: return "mpi";
    default: return "unknown";
    }
}

vp_status vp_comm_allreduce_sum(vp_comm* c, vp_tensor* x) {
    const char* fn = "vp_comm_allreduce_sum";
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "%s: communicator is NULL", fn);
    VP_TRY(vp_tensor_check(fn, "x", c->b, x, VP_F32));
    if (c->kind == VP_COMM_LOCAL) return VP_OK;
#ifdef VP_MPI
    if (c->kind == VP_COMM_MPI) return vp_comm_mpi_allreduce(c->mpi, (float*)x->data, (size_t)vp_tensor_numel(x));
#endif
#ifdef VP_NCCL
    return vp_comm_nccl_allreduce(c->nccl, (float*)x->data, (size_t)vp_tensor_numel(x), vp_backend_stream(c->b));
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "%s: no NCCL in this build", fn);
#endif
}

vp_status vp_comm_broadcast(vp_comm* c, vp_tensor* x, int root) {
    const char* fn = "vp_comm_broadcast";
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "%s: communicator is NULL", fn);
    VP_TRY(vp_tensor_check(fn, "x", c->b, x, VP_F32));
    VP_REQUIRE(root >= 0 && root < c->size, VP_ERR_INVALID_ARG, "%s: root %d is not a rank of %d", fn, root, c->size);
    if (c->kind == VP_COMM_LOCAL) return VP_OK;
#ifdef VP_MPI
    if (c->kind == VP_COMM_MPI) return vp_comm_mpi_broadcast(c->mpi, (float*)x->data, (size_t)vp_tensor_numel(x), root);
#endif
#ifdef VP_NCCL
    return vp_comm_nccl_broadcast(c->nccl, (float*)x->data, (size_t)vp_tensor_numel(x), root,
                                  vp_backend_stream(c->b));
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "%s: no NCCL in this build", fn);
#endif
}

vp_status vp_comm_agree_max(vp_comm* c, int* flag) {
    const char* fn = "vp_comm_agree_max";
    VP_REQUIRE(c != NULL && flag != NULL, VP_ERR_INVALID_ARG, "%s: communicator or flag is NULL", fn);
    if (c->kind == VP_COMM_LOCAL) return VP_OK;
#ifdef VP_MPI
    if (c->kind == VP_COMM_MPI) return vp_comm_mpi_max(c->mpi, flag);
#endif
#ifdef VP_NCCL
    if (c->kind == VP_COMM_NCCL) return vp_comm_nccl_max(c->nccl, flag, vp_backend_stream(c->b));
#endif
    VP_FAIL(VP_ERR_UNSUPPORTED, "%s: no collective library for %s in this build", fn, vp_comm_kind_name(c->kind));
}

void vp_comm_abort(vp_comm* c, int code) {
    (void)c;
    (void)code;
#ifdef VP_MPI
    vp_comm_mpi_abort(code);
#endif
}
