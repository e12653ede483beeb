/* `vulpes data inspect FILE`: what the loader sees in a bar file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/data.h"
#include "vulpes/features.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes data inspect FILE [--skip-bad-rows] [--rows N] [--no-cache]\n\n"
            "  --skip-bad-rows  drop and count bad rows instead of failing on the first\n"
            "  --rows N         feature rows to show (default 5)\n"
            "  --no-cache       parse the CSV even when the binary cache is current\n");
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
    if (vp_features_compute(b, &cfg, x, b->n * F) != VP_OK) {
        free(x);
        return vp_cli_fail("computing the features");
    }
    int64_t first = b->n > warm ? warm : 0;
    int64_t last = first + rows < b->n ? first + rows : b->n;
    printf("features   F = %d, trailing z-score over %d bars clipped to +-%g, warm-up %lld bars%s\n", F,
           cfg.norm_window, (double)cfg.clip, (long long)warm,
           b->n > warm ? "" : " (more than the file has: rows below use partial history)");
    char tb[40];
    for (int64_t t = first; t < last; ++t) printf("  row %-7lld %s\n", (long long)t, vp_time_format_iso(b->time_ms[t], tb, sizeof tb));
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

int vp_cmd_data(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "inspect") != 0) {
        fprintf(stderr, "vulpes data: unknown subcommand '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }

    /* Options. */
    vp_load_opts opts = vp_load_opts_default();
    const char* path = NULL;
    int rows = 5;
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--skip-bad-rows") == 0) {
            opts.skip_bad_rows = 1;
        } else if (strcmp(argv[i], "--no-cache") == 0) {
            opts.use_cache = 0;
        } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            char* end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 0 || v > 1000) {
                fprintf(stderr, "vulpes data: --rows needs an integer in [0, 1000], got '%s'\n", argv[i]);
                return 2;
            }
            rows = (int)v;
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

    /* Load, report, features. */
    vp_bars b;
    vp_load_report r;
    if (vp_bars_load_csv(path, &opts, &b, &r) != VP_OK) return vp_cli_fail("loading the bars");
    print_report(path, &b, &r);
    int rc = rows > 0 ? print_features(&b, rows) : 0;
    vp_bars_free(&b);
    return rc;
}
