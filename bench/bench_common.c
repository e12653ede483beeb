/* Helpers shared by the benchmarks. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "bench.h"

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
