/* The MPI half of the communicator (builds with MPI: VP_MPI): the collectives of CPU ranks
 * under mpirun on host memory. The sum is made deterministic by doing it here rather than
 * trusting MPI_Allreduce's order: every rank's buffer is gathered to rank 0 (MPI_Gather),
 * rank 0 adds them in rank order (x_0 + x_1 + ... + x_{N-1}, one float32 add at a time), and
 * the sum goes back to every rank (MPI_Bcast), so every rank holds the same bits and a run's
 * result is fixed for a fixed rank count whatever MPI's reduction algorithms are. */
#ifdef VP_MPI
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

struct vp_comm_mpi {
    int rank;      /* this rank */
    int size;      /* ranks in the run */
    float* gather; /* rank 0: [size x cap] the gathered buffers; others: NULL */
    size_t cap;    /* floats per rank `gather` holds */
};

/* MPI_Finalize at exit, once, when this process initialised MPI (the communicator may be made
 * and freed more than once; MPI may be initialised once per process). */
static void finalize_at_exit(void) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
}

vp_status vp_mpi_join(const char* fn, const vp_dist* d) {
    int inited = 0, rank = -1, size = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        VP_REQUIRE(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS, VP_ERR_STATE,
                   "%s: MPI_Init_thread failed", fn);
        atexit(finalize_at_exit);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    VP_REQUIRE(rank == d->rank && size == d->size, VP_ERR_STATE,
               "%s: MPI says rank %d of %d, the environment (%s) rank %d of %d: ranks that talk through MPI run "
               "under mpirun", fn, rank, size, vp_dist_source_name(d->source), d->rank, d->size);
    return VP_OK;
}

vp_status vp_comm_mpi_init(vp_comm_mpi** out, const vp_dist* d) {
    const char* fn = "vp_comm_init";
    VP_REQUIRE(d->source == VP_DIST_OMPI || d->source == VP_DIST_PMI, VP_ERR_UNSUPPORTED,
               "%s: %d ranks on the CPU backend talk through MPI and run under mpirun; these ranks come from %s's "
               "variables", fn, d->size, vp_dist_source_name(d->source));
    VP_TRY(vp_mpi_join(fn, d));
    vp_comm_mpi* m = (vp_comm_mpi*)calloc(1, sizeof *m);
    VP_REQUIRE(m != NULL, VP_ERR_OOM, "%s: out of host memory", fn);
    m->rank = d->rank;
    m->size = d->size;
    *out = m;
    return VP_OK;
}

void vp_comm_mpi_free(vp_comm_mpi* m) {
    if (!m) return;
    free(m->gather);
    free(m);
}

vp_status vp_comm_mpi_allreduce(vp_comm_mpi* m, float* x, size_t count) {
    const char* fn = "vp_comm_allreduce_sum";
    VP_REQUIRE(count <= (size_t)INT_MAX, VP_ERR_INVALID_ARG, "%s: %zu floats are more than MPI's int count", fn,
               count);
    if (count == 0) return VP_OK;
    if (m->rank == 0 && m->cap < count) {
        float* g = (float*)realloc(m->gather, (size_t)m->size * count * sizeof *g);
        VP_REQUIRE(g != NULL, VP_ERR_OOM, "%s: out of host memory for %d x %zu floats", fn, m->size, count);
        m->gather = g;
        m->cap = count;
    }
    // the gather writes rank k's buffer at [k x count, (k + 1) x count) of rank 0's
    VP_REQUIRE(MPI_Gather(x, (int)count, MPI_FLOAT, m->gather, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD) ==
                   MPI_SUCCESS, VP_ERR_STATE, "%s: MPI_Gather of %zu floats failed", fn, count);
    if (m->rank == 0) {
        // rank order, one add at a time: x = ((x_0 + x_1) + x_2) + ...
        for (int k = 1; k < m->size; ++k) {
            const float* g = m->gather + (size_t)k * count;
            for (size_t i = 0; i < count; ++i) x[i] += g[i];
        }
    }
    VP_REQUIRE(MPI_Bcast(x, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD) == MPI_SUCCESS, VP_ERR_STATE,
               "%s: MPI_Bcast of the sum (%zu floats) failed", fn, count);
    return VP_OK;
}

vp_status vp_comm_mpi_broadcast(vp_comm_mpi* m, float* x, size_t count, int root) {
    (void)m;
    VP_REQUIRE(count <= (size_t)INT_MAX, VP_ERR_INVALID_ARG, "vp_comm_broadcast: %zu floats are more than MPI's int "
               "count", count);
    VP_REQUIRE(MPI_Bcast(x, (int)count, MPI_FLOAT, root, MPI_COMM_WORLD) == MPI_SUCCESS, VP_ERR_STATE,
               "vp_comm_broadcast: MPI_Bcast of %zu floats from rank %d failed", count, root);
    return VP_OK;
}

vp_status vp_comm_mpi_max(vp_comm_mpi* m, int* v) {
    (void)m;
    VP_REQUIRE(MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS, VP_ERR_STATE,
               "vp_comm_agree: MPI_Allreduce (max) failed");
    return VP_OK;
}

void vp_comm_mpi_abort(int code) {
    int inited = 0, done = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&done);
    if (inited && !done) MPI_Abort(MPI_COMM_WORLD, code);
}
#endif /* VP_MPI */
