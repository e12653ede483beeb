/* `vulpes bench WHAT [--backend B] [--iters N] [--json FILE] [--quick]`: runs the benchmark of
 * the command table's row "bench WHAT" (main.c; the benchmarks live in bench/). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli/commands.h"

static void usage(FILE* f) {
    fprintf(f, "usage: vulpes bench WHAT [--backend cpu|cuda|auto] [--iters N] [--json FILE] [--quick]\n"
               "                   [--batch B] [--ablate KEY[,KEY=VALUE...]] [--envs N] [--steps S]\n\n");
    vp_cli_print_commands(f, "bench");
    fprintf(f,
            "\n  --backend B    where it runs (default auto: the GPU when one is usable)\n"
            "  --iters N      timed repetitions (default: the benchmark's own)\n"
            "  --json FILE    append the JSON lines to FILE (default: stdout)\n"
            "  --quick        smaller shapes, for a smoke run on the CPU\n"
            "  --batch B      bench step: the learner batch (default 8192), for a sweep over B\n"
            "  --ablate LIST  bench step: time the default config's learner, then each switch on (the\n"
            "                 switches of vulpes ablate: KEY for a bool key, KEY=VALUE), side by side\n"
            "  --envs N       bench train: only the collections of N envs (for a profile of one shape)\n"
            "  --steps S      bench train: only the collections of S = train.collect_steps\n\n"
            "The benchmarks measure fixed shapes (SPEC section 10), so they take no key=value overrides.\n");
}

int vp_cmd_bench(int argc, char** argv) {
    vp_bench_opts o = {0, NULL, 0, "auto", 0, NULL, 0, 0};
    int64_t iters = 0;
    const vp_cli_opt opts[] = {
        {"--backend", VP_CLI_CHOICE, &o.backend, NULL, 0, 0, VP_CLI_BACKENDS},
        {"--iters", VP_CLI_COUNT, &iters, NULL, 1, 1000000000, NULL},
        {"--json", VP_CLI_TEXT, &o.json_path, NULL, 0, 0, NULL},
        {"--quick", VP_CLI_SWITCH, &o.quick, NULL, 0, 0, NULL},
        {"--batch", VP_CLI_COUNT, &o.batch, NULL, 1, 1048576, NULL},
        {"--ablate", VP_CLI_TEXT, &o.ablate, NULL, 0, 0, NULL},
        {"--envs", VP_CLI_COUNT, &o.envs, NULL, 1, 16777216, NULL},
        {"--steps", VP_CLI_COUNT, &o.steps, NULL, 1, 4096, NULL},
    };
    const vp_cli_spec spec = {"bench", opts, (int)(sizeof opts / sizeof opts[0]), 1, 0, usage};
    vp_cli_args a;
    int rc = vp_cli_parse(&spec, argc, argv, &a);
    if (rc == VP_CLI_HELP) return 0;
    if (rc != 0) return rc;
    if (a.n_positional == 0) {
        usage(stderr);
        return 2;
    }
    o.iters = (int)iters;
    if (o.ablate && strcmp(a.positional[0], "step") != 0) {
        fprintf(stderr, "vulpes bench: --ablate applies to bench step only, not '%s'\n", a.positional[0]);
        return 2;
    }
    if ((o.envs || o.steps) && strcmp(a.positional[0], "train") != 0) {
        fprintf(stderr, "vulpes bench: --envs and --steps apply to bench train only, not '%s'\n", a.positional[0]);
        return 2;
    }
    // the table's row "bench WHAT"
    int n = 0;
    const vp_cli_command* cmds = vp_cli_commands(&n);
    for (int i = 0; i < n; ++i) {
        if (!cmds[i].bench || strcmp(cmds[i].sub, a.positional[0]) != 0) continue;
        vp_backend* b = vp_cli_backend(o.backend);
        if (!b) return 1;
        rc = cmds[i].bench(b, &o);
        vp_backend_free(b);
        return rc;
    }
    fprintf(stderr, "vulpes bench: unknown benchmark '%s'\n\n", a.positional[0]);
    usage(stderr);
    return 2;
}
