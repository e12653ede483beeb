/* `vulpes data inspect FILE`: what the loader sees in a bar file.
 * `vulpes data synth KIND`: writes a synthetic market as CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli/commands.h"
#include "vulpes/data.h"
#include "vulpes/features.h"
#include "vulpes/synth.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes data inspect FILE [--skip-bad-rows] [--rows N] [--no-cache]\n"
            "       vulpes data synth gbm|regime|ou|trend --bars N --out FILE [--seed S] [--decimals D]\n\n"
            "  --skip-bad-rows  drop and count bad rows instead of failing on the first\n"
            "  --rows N         feature rows to show (default 5)\n"
            "  --no-cache       parse the CSV even when the binary cache is current\n"
            "  --bars N         bars to generate (hourly, from 2000-01-03)\n"
            "  --seed S         Philox seed (default 1)\n"
            "  --decimals D     decimals written (default 5; -1: 17 significant digits, exact)\n");
}

/* Parses an integer option value in [lo, hi]; prints the error and returns 0 when it is not one. */
static int int_arg(const char* opt, const char* text, long long lo, long long hi, long long* v) {
    char* end = NULL;
    long long x = strtoll(text, &end, 10);
    if (!end || *end || end == text || x < lo || x > hi) {
        fprintf(stderr, "vulpes data: %s needs an integer in [%lld, %lld], got '%s'\n", opt, lo, hi, text);
        return 0;
    }
    *v = x;
    return 1;
}

/* A duration as "2d 1h", "1h", "15m", "30s" or "250ms". */
static const char* duration(int64_t ms, char* buf, size_t cap) {
    static const struct {
        int64_t ms;
        const char* unit;
    } units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    size_t used = 0;
    int parts = 0;
    buf[0] = '\0';
    for (int i = 0; i < 5 && parts < 2; ++i) {
        int64_t q = ms / units[i].ms;
        if (q == 0) continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld%s", parts ? " " : "", (long long)q, units[i].unit);
        ms -= q * units[i].ms;
        ++parts;
    }
    if (parts == 0) snprintf(buf, cap, "0");
    return buf;
}

/* Prints the first feature rows (after the warm-up when there are enough bars), one line per feature. */
static int print_features(const vp_bars* b, int rows) {
    vp_feature_cfg cfg = vp_feature_cfg_default();
    int F = vp_features_count(&cfg);
    int64_t warm = vp_features_warmup(&cfg);
    float* x = (float*)malloc((size_t)b->n * (size_t)F * sizeof(float));
    if (!x) {
        fprintf(stderr, "vulpes data: out of memory for the feature matrix\n");
        return 1;
    }
    double t0 = vp_bench_now();
    if (vp_features_compute(b, &cfg, x, b->n * F) != VP_OK) {
        free(x);
        return vp_cli_fail("computing the features");
    }
    double secs = vp_bench_now() - t0;
    int64_t first = b->n > warm ? warm : 0;
    int64_t last = first + rows < b->n ? first + rows : b->n;
    printf("features   [%lld, %d] in %.3f s; trailing z-score over %d bars clipped to +-%g; warm-up %lld bars%s\n",
           (long long)b->n, F, secs, cfg.norm_window, (double)cfg.clip, (long long)warm,
           b->n > warm ? "" : " (more than the file has: rows below use partial history)");
    char tb[40];
    for (int64_t t = first; t < last; ++t)
        printf("  row %-7lld %s\n", (long long)t, vp_time_format_iso(b->time_ms[t], tb, sizeof tb));
    printf("  %-16s", "feature");
    for (int64_t t = first; t < last; ++t) printf(" %9lld", (long long)t);
    printf("\n");
    for (int j = 0; j < F; ++j) {
        printf("  %-16s", vp_feature_name(vp_features_column_id(&cfg, j)));
        for (int64_t t = first; t < last; ++t) printf(" %9.4f", (double)x[t * F + j]);
        printf("\n");
    }
    free(x);
    return 0;
}

/* The report: rows, span, interval, gaps, bad rows, cache, prices. */
static void print_report(const char* path, const vp_bars* b, const vp_load_report* r) {
    char t0[40], t1[40], d[40];
    printf("file       %s\n", path);
    printf("rows       %lld read, %lld kept, %lld dropped as bad\n", (long long)r->rows_read, (long long)r->rows_kept,
           (long long)r->rows_dropped);
    for (int i = 0; i < r->n_reasons; ++i) printf("  dropped  %s\n", r->reasons[i]);
    if (r->rows_dropped > r->n_reasons)
        printf("  dropped  ... and %lld more\n", (long long)(r->rows_dropped - r->n_reasons));
    printf("time       %s, UTC\n", r->time_format);
    printf("volume     %s\n", r->has_volume ? "yes" : "no (zeros)");
    printf("span       %s .. %s\n", vp_time_format_iso(b->time_ms[0], t0, sizeof t0),
           vp_time_format_iso(b->time_ms[b->n - 1], t1, sizeof t1));
    printf("interval   %s (median spacing)\n", duration(r->spacing.interval_ms, d, sizeof d));
    if (r->spacing.gaps > 0) {
        int64_t at = r->spacing.largest_gap_index;
        printf("gaps       %lld spacings > 1.5 x interval; largest %s, from %s to %s\n", (long long)r->spacing.gaps,
               duration(r->spacing.largest_gap_ms, d, sizeof d), vp_time_format_iso(b->time_ms[at - 1], t0, sizeof t0),
               vp_time_format_iso(b->time_ms[at], t1, sizeof t1));
    } else {
        printf("gaps       none\n");
    }

    /* Price range. */
    double lo = b->low[0], hi = b->high[0];
    for (int64_t t = 1; t < b->n; ++t) {
        lo = b->low[t] < lo ? b->low[t] : lo;
        hi = b->high[t] > hi ? b->high[t] : hi;
    }
    printf("prices     first close %.10g, last close %.10g, lowest %.10g, highest %.10g\n", b->close[0],
           b->close[b->n - 1], lo, hi);
    if (r->cache_path[0])
        printf("cache      %s %s\n", r->from_cache ? "read from" : "written to", r->cache_path);
    else
        printf("cache      not used\n");
}

/* `vulpes data synth KIND --bars N --out FILE [--seed S] [--decimals D]`. */
static int cmd_synth(int argc, char** argv) {
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    int kind = -1;
    for (int k = 0; k < VP_SYNTH_KIND_COUNT; ++k)
        if (strcmp(argv[2], vp_synth_kind_name((vp_synth_kind)k)) == 0) kind = k;
    if (kind < 0) {
        fprintf(stderr, "vulpes data synth: unknown market '%s' (gbm, regime, ou or trend)\n", argv[2]);
        return 2;
    }
    vp_synth_cfg cfg = vp_synth_cfg_default((vp_synth_kind)kind);
    long long bars = 0, seed = 1, decimals = 5;
    const char* out = NULL;
    for (int i = 3; i < argc; ++i) {
        int has = i + 1 < argc;
        if (strcmp(argv[i], "--bars") == 0 && has) {
            if (!int_arg("--bars", argv[++i], 1, 1000000000LL, &bars)) return 2;
        } else if (strcmp(argv[i], "--seed") == 0 && has) {
            if (!int_arg("--seed", argv[++i], 0, 9223372036854775807LL, &seed)) return 2;
        } else if (strcmp(argv[i], "--decimals") == 0 && has) {
            if (!int_arg("--decimals", argv[++i], -1, 17, &decimals)) return 2;
        } else if (strcmp(argv[i], "--out") == 0 && has) {
            out = argv[++i];
        } else {
            fprintf(stderr, "vulpes data synth: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (bars < 1 || !out) {
        fprintf(stderr, "vulpes data synth: --bars and --out are required\n");
        return 2;
    }
    cfg.seed = (uint64_t)seed;
    vp_bars b;
    double t0 = vp_bench_now();
    if (vp_synth_generate(&cfg, bars, &b, NULL) != VP_OK) return vp_cli_fail("generating the market");
    double t1 = vp_bench_now();
    vp_status st = vp_bars_save_csv(&b, out, (int)decimals);
    double t2 = vp_bench_now();
    vp_bars_free(&b);
    if (st != VP_OK) return vp_cli_fail("writing the CSV");
    printf("wrote %lld %s bars (seed %lld) to %s: generated in %.3f s, written in %.3f s\n", bars,
           vp_synth_kind_name((vp_synth_kind)kind), seed, out, t1 - t0, t2 - t1);
    return 0;
}

/* `vulpes data inspect FILE [--skip-bad-rows] [--rows N] [--no-cache]`. */
static int cmd_inspect(int argc, char** argv) {
    vp_load_opts opts = vp_load_opts_default();
    const char* path = NULL;
    long long rows = 5;
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--skip-bad-rows") == 0) {
            opts.skip_bad_rows = 1;
        } else if (strcmp(argv[i], "--no-cache") == 0) {
            opts.use_cache = 0;
        } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            if (!int_arg("--rows", argv[++i], 0, 1000, &rows)) return 2;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "vulpes data: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "vulpes data: one FILE only ('%s' and '%s')\n", path, argv[i]);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }

    /* Load (timed), report, features. */
    vp_bars b;
    vp_load_report r;
    double t0 = vp_bench_now();
    if (vp_bars_load_csv(path, &opts, &b, &r) != VP_OK) return vp_cli_fail("loading the bars");
    double secs = vp_bench_now() - t0;
    print_report(path, &b, &r);
    printf("loaded     in %.3f s (%s)\n", secs, r.from_cache ? "binary cache" : "CSV parse");
    int rc = rows > 0 ? print_features(&b, (int)rows) : 0;
    vp_bars_free(&b);
    return rc;
}

int vp_cmd_data(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "inspect") == 0) return cmd_inspect(argc, argv);
    if (strcmp(argv[1], "synth") == 0) return cmd_synth(argc, argv);
    fprintf(stderr, "vulpes data: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
