/* `vulpes bench WHAT`: dispatches to the benchmarks in bench/. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli/commands.h"

typedef struct bench_entry {
    const char* name;                                  /* what */
    int (*run)(vp_backend* b, const vp_bench_opts* o); /* the benchmark */
    const char* help;                                  /* one line */
} bench_entry;

static const bench_entry BENCHES[] = {
    {"gemm", vp_bench_gemm, "the learner's GEMM shapes at batch 8192: ms and TFLOP/s"},
    {"env", vp_bench_env, "env steps/s with random actions (4096 and 65536 envs on CUDA): bytes/step, GB/s"},
    {"step", vp_bench_step, "ms per learner step (default model, B = 8192): phases and TFLOP/s"},
    {"backtest", vp_bench_backtest, "bars/s of the exact backtest and the segments (1M bars on CUDA): encode vs steps"},
    {"train", vp_bench_train, "collection env steps/s with policy inference; iterations/s, collect/learn split"},
};

static void usage(FILE* f) {
    fprintf(f, "usage: vulpes bench WHAT [--backend cpu|cuda|auto] [--iters N] [--json FILE] [--quick]\n\n");
    for (size_t i = 0; i < sizeof BENCHES / sizeof BENCHES[0]; ++i) fprintf(f, "  %-10s %s\n", BENCHES[i].name, BENCHES[i].help);
}

int vp_cmd_bench(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    vp_bench_opts o = {0, NULL, 0, "auto"};
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            o.backend = argv[++i];
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%d", &o.iters) != 1 || o.iters < 1) {
                fprintf(stderr, "vulpes bench: --iters needs a positive integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            o.json_path = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            o.quick = 1;
        } else {
            fprintf(stderr, "vulpes bench: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    for (size_t i = 0; i < sizeof BENCHES / sizeof BENCHES[0]; ++i) {
        if (strcmp(argv[1], BENCHES[i].name) != 0) continue;
        vp_backend* b = vp_cli_backend(o.backend);
        if (!b) return 1;
        int rc = BENCHES[i].run(b, &o);
        vp_backend_free(b);
        return rc;
    }
    fprintf(stderr, "vulpes bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
