/* Helpers shared by the benchmarks. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "bench.h"

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

vp_status vp_bench_time_body(vp_backend* b, vp_graph_body body, void* ctx, int graph, int units, double* ms) {
    vp_graph* g = NULL;
    if (graph) VP_TRY(vp_graph_capture(b, body, ctx, &g));
    double per[VP_BENCH_REPS];
    vp_status s = VP_OK;
    for (int r = 0; r <= VP_BENCH_REPS && s == VP_OK; ++r) {
        const double t0 = vp_bench_now();
        s = graph ? vp_graph_launch(b, g) : body(b, ctx);
        if (s == VP_OK) s = vp_backend_sync(b);
        if (r > 0) per[r - 1] = (vp_bench_now() - t0) * 1e3 / units; /* launch 0 warms up */
    }
    vp_graph_free(g);
    VP_TRY(s);
    qsort(per, VP_BENCH_REPS, sizeof per[0], cmp_double);
    *ms = per[VP_BENCH_REPS / 2];
    return VP_OK;
}

double vp_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

FILE* vp_bench_json_open(const vp_bench_opts* o) {
    if (o && o->json_path) {
        FILE* f = fopen(o->json_path, "a");
        if (f) return f;
        fprintf(stderr, "vulpes bench: cannot open %s for appending; JSON lines go to stdout\n", o->json_path);
    }
    return stdout;
}

void vp_bench_json_close(FILE* f) {
    if (f && f != stdout) fclose(f);
}
