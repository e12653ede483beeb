/* A process's rank and size from its environment (vp_dist_from): each source, the
 * precedence between them, the defaults of the local fields, and every refusal by the
 * variable and value it names. */
#include "vp_test.h"

/* A fake environment: NULL-terminated "NAME=value" strings. */
typedef struct fake_env {
    const char* const* vars;
} fake_env;

static const char* fake_get(void* ctx, const char* name) {
    const fake_env* e = (const fake_env*)ctx;
    const size_t n = strlen(name);
    for (const char* const* v = e->vars; *v; ++v)
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=') return *v + n + 1;
    return NULL;
}

/* vp_dist_from over the strings given. */
static vp_status parse(vp_dist* d, const char* const* vars) {
    fake_env e = {vars};
    return vp_dist_from(d, fake_get, &e);
}

/* Expects the parse to succeed with exactly these fields. */
#define EXPECT_DIST(vars, r, s, lr, ls, src)                                                                   \
    do {                                                                                                       \
        vp_dist d_;                                                                                            \
        CHECK_OK(parse(&d_, vars));                                                                            \
        CHECK(d_.rank == (r) && d_.size == (s) && d_.local_rank == (lr) && d_.local_size == (ls) &&            \
                  d_.source == (src),                                                                          \
              "got rank %d size %d local %d/%d source %s", d_.rank, d_.size, d_.local_rank, d_.local_size,     \
              vp_dist_source_name(d_.source));                                                                 \
    } while (0)

static void test_single(void) {
    const char* none[] = {"HOME=/root", "PATH=/bin", NULL};
    EXPECT_DIST(none, 0, 1, 0, 1, VP_DIST_SINGLE);
    vp_dist d;
    CHECK_OK(parse(&d, none));
    CHECK(d.rendezvous[0] == '\0', "rendezvous '%s'", d.rendezvous);
    vp_dist s = vp_dist_single();
    CHECK(s.rank == 0 && s.size == 1 && s.local_rank == 0 && s.local_size == 1 && s.source == VP_DIST_SINGLE,
          "vp_dist_single");
}

static void test_vulpes(void) {
    const char* v[] = {"VULPES_RANK=2", "VULPES_WORLD_SIZE=4", "VULPES_LOCAL_RANK=2", "VULPES_LOCAL_SIZE=4",
                       "VULPES_RENDEZVOUS=/shared/rdv", NULL};
    EXPECT_DIST(v, 2, 4, 2, 4, VP_DIST_VULPES);
    vp_dist d;
    CHECK_OK(parse(&d, v));
    CHECK(strcmp(d.rendezvous, "/shared/rdv") == 0, "rendezvous '%s'", d.rendezvous);
    // the local fields default to the global ones (one machine)
    const char* nolocal[] = {"VULPES_RANK=3", "VULPES_WORLD_SIZE=8", NULL};
    EXPECT_DIST(nolocal, 3, 8, 3, 8, VP_DIST_VULPES);
    const char* one[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=1", NULL};
    EXPECT_DIST(one, 0, 1, 0, 1, VP_DIST_VULPES);
}

static void test_mpi(void) {
    // two machines of 4: rank 5 is the second on its machine
    const char* ompi[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                          "OMPI_COMM_WORLD_LOCAL_SIZE=4", NULL};
    EXPECT_DIST(ompi, 5, 8, 1, 4, VP_DIST_OMPI);
    const char* pmi[] = {"PMI_RANK=6", "PMI_SIZE=8", "MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=4", NULL};
    EXPECT_DIST(pmi, 6, 8, 2, 4, VP_DIST_PMI);
    const char* pmi_nolocal[] = {"PMI_RANK=1", "PMI_SIZE=2", NULL};
    EXPECT_DIST(pmi_nolocal, 1, 2, 1, 2, VP_DIST_PMI);
}

static void test_precedence(void) {
    // vulpes's variables win over Open MPI's, Open MPI's over PMI's
    const char* both[] = {"PMI_RANK=1", "PMI_SIZE=3", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
                          "VULPES_RANK=1", "VULPES_WORLD_SIZE=2", NULL};
    EXPECT_DIST(both, 1, 2, 1, 2, VP_DIST_VULPES);
    const char* mpis[] = {"PMI_RANK=1", "PMI_SIZE=3", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", NULL};
    EXPECT_DIST(mpis, 0, 2, 0, 2, VP_DIST_OMPI);
    // another source's bad local value is not read
    const char* other_bad[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=2", "MPI_LOCALRANKID=x", NULL};
    EXPECT_DIST(other_bad, 0, 2, 0, 2, VP_DIST_VULPES);
}

static void test_refusals(void) {
    vp_dist d;
    const char* rank_ge[] = {"VULPES_RANK=4", "VULPES_WORLD_SIZE=4", NULL};
    CHECK_STATUS(parse(&d, rank_ge), VP_ERR_INVALID_ARG, "VULPES_RANK = 4 is not below VULPES_WORLD_SIZE = 4");
    const char* size0[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=0", NULL};
    CHECK_STATUS(parse(&d, size0), VP_ERR_INVALID_ARG, "VULPES_WORLD_SIZE = 0: a run has at least 1 process");
    const char* nan_rank[] = {"VULPES_RANK=one", "VULPES_WORLD_SIZE=2", NULL};
    CHECK_STATUS(parse(&d, nan_rank), VP_ERR_PARSE, "VULPES_RANK = 'one' is not a whole number >= 0");
    const char* neg[] = {"OMPI_COMM_WORLD_RANK=-1", "OMPI_COMM_WORLD_SIZE=2", NULL};
    CHECK_STATUS(parse(&d, neg), VP_ERR_PARSE, "OMPI_COMM_WORLD_RANK = '-1' is not a whole number >= 0");
    const char* space[] = {"PMI_RANK=1 ", "PMI_SIZE=2", NULL};
    CHECK_STATUS(parse(&d, space), VP_ERR_PARSE, "PMI_RANK = '1 ' is not a whole number >= 0");
    const char* empty[] = {"VULPES_RANK=", "VULPES_WORLD_SIZE=2", NULL};
    CHECK_STATUS(parse(&d, empty), VP_ERR_PARSE, "VULPES_RANK is set but empty");
    const char* huge[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=99999999999", NULL};
    CHECK_STATUS(parse(&d, huge), VP_ERR_PARSE, "VULPES_WORLD_SIZE = '99999999999' is too large");
    const char* no_size[] = {"VULPES_RANK=1", NULL};
    CHECK_STATUS(parse(&d, no_size), VP_ERR_INVALID_ARG, "VULPES_RANK = '1' is set but VULPES_WORLD_SIZE is not");
    const char* no_rank[] = {"PMI_SIZE=2", NULL};
    CHECK_STATUS(parse(&d, no_rank), VP_ERR_INVALID_ARG, "PMI_SIZE = '2' is set but PMI_RANK is not");
    const char* lr_ge[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=4",
                           "OMPI_COMM_WORLD_LOCAL_SIZE=4", NULL};
    CHECK_STATUS(parse(&d, lr_ge), VP_ERR_INVALID_ARG,
                 "OMPI_COMM_WORLD_LOCAL_RANK = 4 is not below OMPI_COMM_WORLD_LOCAL_SIZE = 4");
    const char* ls_gt[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=2", "VULPES_LOCAL_SIZE=3", NULL};
    CHECK_STATUS(parse(&d, ls_gt), VP_ERR_INVALID_ARG, "VULPES_LOCAL_SIZE = 3 exceeds VULPES_WORLD_SIZE = 2");
    const char* ls0[] = {"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALNRANKS=0", NULL};
    CHECK_STATUS(parse(&d, ls0), VP_ERR_INVALID_ARG, "MPI_LOCALNRANKS = 0: a machine runs at least 1 process");
    const char* lr_bad[] = {"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALRANKID=a", NULL};
    CHECK_STATUS(parse(&d, lr_bad), VP_ERR_PARSE, "MPI_LOCALRANKID = 'a' is not a whole number >= 0");
    const char* lr_above[] = {"VULPES_RANK=0", "VULPES_WORLD_SIZE=4", "VULPES_LOCAL_RANK=1", NULL};
    CHECK_STATUS(parse(&d, lr_above), VP_ERR_INVALID_ARG, "VULPES_LOCAL_RANK = 1 exceeds VULPES_RANK = 0");
    // a rendezvous path that does not fit
    static char longpath[VP_DIST_PATH_MAX + 32];
    memcpy(longpath, "VULPES_RENDEZVOUS=", 18);
    memset(longpath + 18, 'a', VP_DIST_PATH_MAX + 4);
    longpath[18 + VP_DIST_PATH_MAX + 4] = '\0';
    const char* lp[] = {longpath, NULL};
    CHECK_STATUS(parse(&d, lp), VP_ERR_INVALID_ARG, "VULPES_RENDEZVOUS is 1028 characters long");
    CHECK_STATUS(vp_dist_from(NULL, fake_get, NULL), VP_ERR_INVALID_ARG, "d or get is NULL");
}

static void test_source_names(void) {
    CHECK(strcmp(vp_dist_source_name(VP_DIST_SINGLE), "single") == 0, "single");
    CHECK(strcmp(vp_dist_source_name(VP_DIST_VULPES), "vulpes") == 0, "vulpes");
    CHECK(strcmp(vp_dist_source_name(VP_DIST_OMPI), "openmpi") == 0, "openmpi");
    CHECK(strcmp(vp_dist_source_name(VP_DIST_PMI), "pmi") == 0, "pmi");
    CHECK(strcmp(vp_dist_source_name(VP_DIST_SOURCE_COUNT), "unknown") == 0, "unknown");
}

int main(void) {
    RUN_TEST(test_single);
    RUN_TEST(test_vulpes);
    RUN_TEST(test_mpi);
    RUN_TEST(test_precedence);
    RUN_TEST(test_refusals);
    RUN_TEST(test_source_names);
    return vpt_finish();
}
