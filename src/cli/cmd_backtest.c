/* `vulpes backtest --checkpoint CK --data FILE [--from T0] [--to T1] [--out DIR] [--force]
 * [--segments N] [--backend B] [--no-fused]`: runs vp_backtest_job_run, prints the metrics
 * table and the output folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/backtest.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes backtest --checkpoint CK [--data FILE] [--from T0] [--to T1] [--out DIR] [--force]\n"
            "                       [--segments N] [--backend cpu|cuda|auto] [--no-fused]\n\n"
            "Runs the checkpoint's network greedily over bars [T0, T1) of FILE with the training run's costs and\n"
            "writes trades.csv, equity.csv, summary.json and report.html.\n\n"
            "  --checkpoint CK  best.safetensors (or last.safetensors) of a training run; its config gives the\n"
            "                   network, instrument, episode length and features\n"
            "  --data FILE      CSV bars (or synth:KIND[:...]); default: the run's data.path\n"
            "  --from T0        first decision bar: a bar index, or a time (2017-06-01, 2017-06-01T12:00);\n"
            "                   default: the first bar after the feature warm-up\n"
            "  --to T1          end of the span, exclusive (same forms); default: the end of the data\n"
            "  --out DIR        output folder (default runs/YYYYmmdd-HHMMSS-backtest); must be absent or empty\n"
            "  --force          reuse a non-empty output folder (the earlier files move into DIR/replaced-N)\n"
            "  --segments N     N windows side by side, each starting flat (fast; default 1: the exact path)\n"
            "  --backend B      where to run (default auto: the GPU when one is usable)\n"
            "  --no-fused       on CUDA, run the op path instead of the one-kernel sequential path\n");
}

int vp_cmd_backtest(int argc, char** argv) {
    vp_backtest_job job;
    memset(&job, 0, sizeof job);
    job.n_windows = 1;
    job.fused = 1;
    const char* backend = "auto";
    for (int i = 1; i < argc; ++i) {
        const char* s = argv[i];
        const int more = i + 1 < argc;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(s, "--checkpoint") == 0 && more) {
            job.checkpoint = argv[++i];
        } else if (strcmp(s, "--data") == 0 && more) {
            job.data = argv[++i];
        } else if (strcmp(s, "--from") == 0 && more) {
            job.from = argv[++i];
        } else if (strcmp(s, "--to") == 0 && more) {
            job.to = argv[++i];
        } else if (strcmp(s, "--out") == 0 && more) {
            job.out = argv[++i];
        } else if (strcmp(s, "--force") == 0) {
            job.force = 1;
        } else if (strcmp(s, "--no-fused") == 0) {
            job.fused = 0;
        } else if (strcmp(s, "--backend") == 0 && more) {
            backend = argv[++i];
        } else if (strcmp(s, "--segments") == 0 && more) {
            char* end = NULL;
            job.n_windows = strtoll(argv[++i], &end, 10);
            if (!end || *end != '\0' || job.n_windows < 1) {
                fprintf(stderr, "vulpes backtest: --segments needs a positive integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "vulpes backtest: unexpected argument '%s'\n\n", s);
            usage(stderr);
            return 2;
        }
    }
    if (!job.checkpoint) {
        fprintf(stderr, "vulpes backtest: --checkpoint is required\n\n");
        usage(stderr);
        return 2;
    }
    vp_backend* b = vp_cli_backend(backend);
    if (!b) return 1;
    vp_rollout_result r;
    char dir[1024];
    vp_status s = vp_backtest_job_run(b, &job, &r, dir, sizeof dir);
    if (s == VP_OK) {
        printf("backtest of bars [%lld, %lld): %lld decisions, %lld window%s, %s path on %s\n",
               (long long)r.span.begin, (long long)r.span.end, (long long)(r.span.end - r.span.begin - 1),
               (long long)r.n_windows, r.n_windows == 1 ? "" : "s", r.path, vp_backend_name(b));
        printf("encoding %.3f s, sequential part %.3f s (%.0f bars/s)\n\n", r.encode_s, r.sequential_s,
               r.sequential_s > 0 ? (double)(r.span.end - r.span.begin - 1) / r.sequential_s : 0.0);
        s = vp_metrics_print(&r.summary, stdout);
        printf("\noutput folder: %s\n", dir);
    }
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    return s == VP_OK ? 0 : vp_cli_fail("in the backtest");
}
