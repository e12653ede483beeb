/* A process's rank and size from its environment: vulpes's launcher variables, Open MPI's,
 * MPICH's / PMI's, or the single process. Every value is checked before use. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/dist.h"

/* The variable names of one source: rank, size, local rank, local size. */
typedef struct dist_names {
    vp_dist_source source;
    const char* rank;
    const char* size;
    const char* local_rank;
    const char* local_size;
} dist_names;

static const dist_names SOURCES[] = {
    {VP_DIST_VULPES, "VULPES_RANK", "VULPES_WORLD_SIZE", "VULPES_LOCAL_RANK", "VULPES_LOCAL_SIZE"},
    {VP_DIST_OMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {VP_DIST_PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
};

/* Parses variable `name`'s value `v` as a whole number in [0, 2^31 - 1]: digits only, no
 * sign, no spaces. */
static vp_status parse_int(const char* name, const char* v, int* out) {
    VP_REQUIRE(v[0] != '\0', VP_ERR_PARSE, "%s is set but empty: expected a whole number >= 0", name);
    long long x = 0;
    for (const char* p = v; *p; ++p) {
        VP_REQUIRE(*p >= '0' && *p <= '9', VP_ERR_PARSE, "%s = '%.64s' is not a whole number >= 0", name, v);
        x = x * 10 + (*p - '0');
        VP_REQUIRE(x <= 2147483647LL, VP_ERR_PARSE, "%s = '%.64s' is too large (at most 2147483647)", name, v);
    }
    *out = (int)x;
    return VP_OK;
}

/* Reads an optional variable into *out (left alone when unset); *set (may be NULL) says
 * whether it was. */
static vp_status read_opt(vp_dist_getenv_fn get, void* ctx, const char* name, int* out, int* set) {
    const char* v = get(ctx, name);
    if (set) *set = v != NULL;
    return v ? parse_int(name, v, out) : VP_OK;
}

/* Fills d from one source whose rank or size is set. */
static vp_status from_source(vp_dist* d, const dist_names* n, vp_dist_getenv_fn get, void* ctx) {
    const char* rv = get(ctx, n->rank);
    const char* sv = get(ctx, n->size);
    VP_REQUIRE(rv != NULL, VP_ERR_INVALID_ARG, "%s = '%.64s' is set but %s is not: both name a process of the run",
               n->size, sv, n->rank);
    VP_REQUIRE(sv != NULL, VP_ERR_INVALID_ARG, "%s = '%.64s' is set but %s is not: both name a process of the run",
               n->rank, rv, n->size);
    VP_TRY(parse_int(n->rank, rv, &d->rank));
    VP_TRY(parse_int(n->size, sv, &d->size));
    VP_REQUIRE(d->size >= 1, VP_ERR_INVALID_ARG, "%s = %d: a run has at least 1 process", n->size, d->size);
    VP_REQUIRE(d->rank < d->size, VP_ERR_INVALID_ARG, "%s = %d is not below %s = %d", n->rank, d->rank, n->size,
               d->size);
    // the machine's share: absent, the whole run is on one machine
    int ls_set = 0;
    d->local_rank = d->rank;
    d->local_size = d->size;
    VP_TRY(read_opt(get, ctx, n->local_rank, &d->local_rank, NULL));
    VP_TRY(read_opt(get, ctx, n->local_size, &d->local_size, &ls_set));
    VP_REQUIRE(d->local_size >= 1, VP_ERR_INVALID_ARG, "%s = %d: a machine runs at least 1 process", n->local_size,
               d->local_size);
    VP_REQUIRE(d->local_size <= d->size, VP_ERR_INVALID_ARG, "%s = %d exceeds %s = %d", n->local_size,
               d->local_size, n->size, d->size);
    VP_REQUIRE(d->local_rank < d->local_size, VP_ERR_INVALID_ARG, "%s = %d is not below %s = %d%s", n->local_rank,
               d->local_rank, ls_set ? n->local_size : n->size, d->local_size,
               ls_set ? "" : " (the local size when it is not set)");
    VP_REQUIRE(d->local_rank <= d->rank, VP_ERR_INVALID_ARG, "%s = %d exceeds %s = %d: a rank's place on its machine "
               "cannot be above its place in the run", n->local_rank, d->local_rank, n->rank, d->rank);
    d->source = n->source;
    return VP_OK;
}

vp_dist vp_dist_single(void) {
    vp_dist d;
    memset(&d, 0, sizeof d);
    d.size = 1;
    d.local_size = 1;
    d.source = VP_DIST_SINGLE;
    return d;
}

vp_status vp_dist_from(vp_dist* d, vp_dist_getenv_fn get, void* ctx) {
    VP_REQUIRE(d != NULL && get != NULL, VP_ERR_INVALID_ARG, "vp_dist_from: d or get is NULL");
    *d = vp_dist_single();
    vp_dist r = vp_dist_single();
    // the first source with its rank or its size set decides
    for (size_t i = 0; i < sizeof SOURCES / sizeof SOURCES[0]; ++i) {
        const dist_names* n = &SOURCES[i];
        if (!get(ctx, n->rank) && !get(ctx, n->size)) continue;
        VP_TRY(from_source(&r, n, get, ctx));
        break;
    }
    // the NCCL id's shared folder (needed only by a run of more than one rank without MPI)
    const char* rz = get(ctx, "VULPES_RENDEZVOUS");
    if (rz) {
        VP_REQUIRE(strlen(rz) < sizeof r.rendezvous, VP_ERR_INVALID_ARG,
                   "VULPES_RENDEZVOUS is %zu characters long (at most %d)", strlen(rz), VP_DIST_PATH_MAX - 1);
        snprintf(r.rendezvous, sizeof r.rendezvous, "%s", rz);
    }
    *d = r;
    return VP_OK;
}

static const char* process_getenv(void* ctx, const char* name) {
    (void)ctx;
    return getenv(name);
}

vp_status vp_dist_from_env(vp_dist* d) {
    return vp_dist_from(d, process_getenv, NULL);
}

const char* vp_dist_source_name(vp_dist_source s) {
    switch (s) {
    case VP_DIST_SINGLE: return "single";
    case VP_DIST_VULPES: return "vulpes";
    case VP_DIST_OMPI: return "openmpi";
    case VP_DIST_PMI: return "pmi";
    default: return "unknown";
    }
}
