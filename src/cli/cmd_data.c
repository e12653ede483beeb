/* `vulpes data inspect FILE`: what the loader sees in a bar file, its spread included.
 * `vulpes data synth KIND`: writes a synthetic market as CSV. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli/commands.h"
#include "data/csv_layout.h"
#include "vulpes/data.h"
#include "vulpes/features.h"
#include "vulpes/synth.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes data inspect FILE [--skip-bad-rows] [--rows N] [--no-cache] [--tick-size T]\n"
            "       vulpes data synth gbm|regime|ou|trend --bars N --out FILE [--seed S] [--decimals D]\n\n");
    vp_cli_print_commands(f, "data");
    fprintf(f,
            "\nThe data commands run on the CPU (no --backend) and take no key=value overrides.\n\n"
            "  --skip-bad-rows  drop and count bad rows instead of failing on the first\n"
            "  --rows N         feature rows to show (default 5)\n"
            "  --no-cache       parse the CSV even when the binary cache is current\n"
            "  --tick-size T    the tick a spread is counted in (default %g, instrument.tick_size's default)\n"
            "  --bars N         bars to generate (hourly, from 2000-01-03)\n"
            "  --seed S         Philox seed (default 1)\n"
            "  --decimals D     decimals written (default 5; -1: 17 significant digits, exact)\n",
            vp_instrument_default().tick_size);
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
    printf("features   [%lld, %d] in %.3f s; trailing z-score over %d bars clipped to +-%g; warm-up %lld %s%s\n",
           (long long)b->n, F, secs, cfg.norm_window, (double)cfg.clip, (long long)warm, vp_plural(warm, "bar", "bars"),
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

/* Orders doubles, for the median. */
static int cmp_double(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* v with at most `decimals` decimals, without an exponent or trailing zeros ("0.00006",
 * "0.25", "3"; %g beyond 1e15 or below 10^-decimals), into buf[32]. */
static const char* plain_number(double v, int decimals, char* buf) {
    if (!(fabs(v) < 1e15) || (v != 0.0 && fabs(v) < pow(10.0, -decimals))) {
        snprintf(buf, 32, "%g", v);
        return buf;
    }
    snprintf(buf, 32, "%.*f", decimals, v);
    char* e = buf + strlen(buf);
    while (e > buf && e[-1] == '0') *--e = '\0';
    if (e > buf && e[-1] == '.') e[-1] = '\0';
    return buf;
}

/* Which columns of the file at path give its spread, by the loader's own header rules, in
 * words: "the spread column", "the bid and ask columns (ask - bid)", or "a spread per bar"
 * when the header cannot be read again. */
static const char* spread_source(const char* path) {
    const char* unknown = "a spread per bar";
    FILE* f = fopen(path, "rb");
    if (!f) return unknown;
    static char head[1 << 16];
    const size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    // the header line, after a byte-order mark, up to its line end (LF, CRLF or CR)
    const char* p = n >= 3 && memcmp(head, "\xEF\xBB\xBF", 3) == 0 ? head + 3 : head;
    const char* end = p + strcspn(p, "\r\n");
    vp_csv_layout lay;
    if (vp_csv_layout_read(path, p, end, &lay) != VP_OK) {
        vp_clear_error();
        return unknown;
    }
    const char* src = lay.col[VP_COL_SPREAD] >= 0 ? "the spread column"
                      : lay.col[VP_COL_BID] >= 0  ? "the bid and ask columns (ask - bid)"
                                                  : unknown;
    vp_csv_layout_free(&lay);
    return src;
}

/* The spread line: where the file's spread comes from, and its median and largest value in
 * price units and in ticks of `tick`; or that the instrument's spread_ticks apply. */
static int print_spread(const char* path, const vp_bars* b, double tick) {
    if (!b->spread) {
        printf("spread     none in the file: instrument.spread_ticks x instrument.tick_size applies on every bar\n");
        return 0;
    }
    double* v = (double*)malloc(sizeof(double) * (size_t)b->n);
    if (!v) {
        fprintf(stderr, "vulpes data inspect: out of memory for the %lld spreads\n", (long long)b->n);
        return 1;
    }
    memcpy(v, b->spread, sizeof(double) * (size_t)b->n);
    qsort(v, (size_t)b->n, sizeof(double), cmp_double);
    const int64_t h = b->n / 2;
    const double median = b->n % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]), max = v[b->n - 1];
    free(v);
    char m[32], mt[32], x[32], xt[32], t[32];
    printf("spread     %s: median %s = %s ticks, max %s = %s ticks (price units; ticks of %s, --tick-size)\n",
           spread_source(path), plain_number(median, 10, m), plain_number(median / tick, 3, mt), plain_number(max, 10, x),
           plain_number(max / tick, 3, xt), plain_number(tick, 10, t));
    return 0;
}

/* The report: rows, span, interval, gaps, bad rows, prices, the spread (in ticks of `tick`),
 * cache; returns 0, or 1 when it ran out of memory. */
static int print_report(const char* path, const vp_bars* b, const vp_load_report* r, double tick) {
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
        printf("gaps       %lld %s > 1.5 x interval; largest %s, from %s to %s\n", (long long)r->spacing.gaps,
               vp_plural(r->spacing.gaps, "spacing", "spacings"),
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
    if (print_spread(path, b, tick) != 0) return 1;
    if (r->cache_path[0])
        printf("cache      %s %s\n", r->from_cache ? "read from" : "written to", r->cache_path);
    else
        printf("cache      not used\n");
    return 0;
}

/* `vulpes data synth KIND --bars N --out FILE [--seed S] [--decimals D]` (argv from "synth" on). */
static int cmd_synth(int argc, char** argv) {
    int64_t bars = 0, seed = 1, decimals = 5;
    const char* out = NULL;
    const vp_cli_opt opts[] = {
        {"--bars", VP_CLI_COUNT, &bars, NULL, 1, 1000000000, NULL},
        {"--seed", VP_CLI_COUNT, &seed, NULL, 0, INT64_MAX, NULL},
        {"--decimals", VP_CLI_COUNT, &decimals, NULL, -1, 17, NULL},
        {"--out", VP_CLI_TEXT, &out, NULL, 0, 0, NULL},
    };
    const vp_cli_spec spec = {"data synth", opts, (int)(sizeof opts / sizeof opts[0]), 1, 0, usage};
    vp_cli_args a;
    int rc = vp_cli_parse(&spec, argc, argv, &a);
    if (rc == VP_CLI_HELP) return 0;
    if (rc != 0) return rc;
    if (a.n_positional == 0) {
        usage(stderr);
        return 2;
    }
    int kind = -1;
    for (int k = 0; k < VP_SYNTH_KIND_COUNT; ++k)
        if (strcmp(a.positional[0], vp_synth_kind_name((vp_synth_kind)k)) == 0) kind = k;
    if (kind < 0) {
        fprintf(stderr, "vulpes data synth: unknown market '%s' (gbm, regime, ou or trend)\n", a.positional[0]);
        return 2;
    }
    if (bars < 1 || !out) {
        fprintf(stderr, "vulpes data synth: --bars and --out are required\n");
        return 2;
    }
    vp_synth_cfg cfg = vp_synth_cfg_default((vp_synth_kind)kind);
    cfg.seed = (uint64_t)seed;
    vp_bars b;
    double t0 = vp_bench_now();
    if (vp_synth_generate(&cfg, bars, &b, NULL) != VP_OK) return vp_cli_fail("generating the market");
    double t1 = vp_bench_now();
    vp_status st = vp_bars_save_csv(&b, out, (int)decimals);
    double t2 = vp_bench_now();
    vp_bars_free(&b);
    if (st != VP_OK) return vp_cli_fail("writing the CSV");
    printf("wrote %lld %s %s (seed %lld) to %s: generated in %.3f s, written in %.3f s\n", (long long)bars,
           vp_synth_kind_name((vp_synth_kind)kind), vp_plural(bars, "bar", "bars"), (long long)seed, out, t1 - t0, t2 - t1);
    return 0;
}

/* `vulpes data inspect FILE [--skip-bad-rows] [--rows N] [--no-cache] [--tick-size T]` (argv from "inspect" on). */
static int cmd_inspect(int argc, char** argv) {
    vp_load_opts opts = vp_load_opts_default();
    int64_t rows = 5;
    int no_cache = 0;
    const char* tick_text = NULL;
    const vp_cli_opt options[] = {
        {"--skip-bad-rows", VP_CLI_SWITCH, &opts.skip_bad_rows, NULL, 0, 0, NULL},
        {"--no-cache", VP_CLI_SWITCH, &no_cache, NULL, 0, 0, NULL},
        {"--rows", VP_CLI_COUNT, &rows, NULL, 0, 1000, NULL},
        {"--tick-size", VP_CLI_TEXT, &tick_text, NULL, 0, 0, NULL},
    };
    const vp_cli_spec spec = {"data inspect", options, (int)(sizeof options / sizeof options[0]), 1, 0, usage};
    vp_cli_args a;
    int rc = vp_cli_parse(&spec, argc, argv, &a);
    if (rc == VP_CLI_HELP) return 0;
    if (rc != 0) return rc;
    if (a.n_positional == 0) {
        usage(stderr);
        return 2;
    }
    if (no_cache) opts.use_cache = 0;
    const char* path = a.positional[0];
    double tick = vp_instrument_default().tick_size;
    if (tick_text) {
        char* end = NULL;
        errno = 0;
        tick = strtod(tick_text, &end);
        if (end == tick_text || *end != '\0' || errno == ERANGE || !isfinite(tick) || !(tick > 0)) {
            fprintf(stderr, "vulpes data inspect: --tick-size needs a price increment > 0, got '%s'\n", tick_text);
            return 2;
        }
    }

    /* Load (timed), report, features. */
    vp_bars b;
    vp_load_report r;
    double t0 = vp_bench_now();
    if (vp_bars_load_csv(path, &opts, &b, &r) != VP_OK) return vp_cli_fail("loading the bars");
    double secs = vp_bench_now() - t0;
    rc = print_report(path, &b, &r, tick);
    printf("loaded     in %.3f s (%s)\n", secs, r.from_cache ? "binary cache" : "CSV parse");
    if (rc == 0 && rows > 0) rc = print_features(&b, (int)rows);
    vp_bars_free(&b);
    return rc;
}

int vp_cmd_data(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "inspect") == 0) return cmd_inspect(argc - 1, argv + 1);
    if (strcmp(argv[1], "synth") == 0) return cmd_synth(argc - 1, argv + 1);
    fprintf(stderr, "vulpes data: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
