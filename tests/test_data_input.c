/* Tests of hostile or unusual CSV input and bar caches: NUL bytes, CR-only and mixed line
 * ends, very long numbers, and cache entries whose hash is valid but whose bars are not. */
#include "test_data_util.h"

#include "data/data_internal.h"
#include "vp_test.h"

/* Warnings and the last one's text. */
static int g_warnings = 0;
static char g_last_warning[1024];
static void keep_warnings(vp_log_level level, const char* msg, void* user) {
    (void)user;
    if (level < VP_LOG_WARN) return;
    g_warnings++;
    snprintf(g_last_warning, sizeof g_last_warning, "%s", msg);
}

/* Reads a whole file into a malloc'd buffer; *len gets its size. */
static char* read_all(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* b = (char*)malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Writes len bytes to path; returns 1 on success. */
static int write_all(const char* path, const char* data, size_t len) {
    FILE* f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* A NUL byte anywhere fails the load, naming line and column, even when skipping bad rows. */
static void test_nul_bytes(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    CHECK_STATUS(vp_bars_load_csv("tests/data/nul_in_header_name.csv", &o, &b, NULL), VP_ERR_PARSE,
                 "tests/data/nul_in_header_name.csv: line 1, column 2");
    CHECK(strstr(vp_last_error(), "NUL byte") != NULL, "rule named: %s", vp_last_error());
    CHECK(b.n == 0 && b.time_ms == NULL, "nothing loaded");
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_nul_in_row.csv", &o, &b, NULL), VP_ERR_PARSE,
                 "tests/data/bad_nul_in_row.csv: line 3, column 3 (High): NUL byte");
    o.skip_bad_rows = 1;
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_nul_in_row.csv", &o, &b, NULL), VP_ERR_PARSE,
                 "line 3, column 3 (High): NUL byte");
    CHECK(b.n == 0 && b.time_ms == NULL, "a NUL is not a skippable row problem");
}

/* CR-only line ends are line ends; CR alone mixed with LF is refused. */
static void test_line_ends(void) {
    char dir[64], lf[256];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    vp_load_opts o = tdu_nocache();
    vp_bars a, b;
    vp_load_report ra, rb;

    /* The CR-only file loads as its LF copy does. */
    size_t n = 0;
    char* text = read_all("tests/data/cr_only.csv", &n);
    CHECK(text != NULL && memchr(text, '\n', n) == NULL && memchr(text, '\r', n) != NULL, "fixture is CR only");
    if (text)
        for (size_t i = 0; i < n; ++i)
            if (text[i] == '\r') text[i] = '\n';
    snprintf(lf, sizeof lf, "%s/lf.csv", dir);
    CHECK(text && write_all(lf, text, n), "LF copy");
    free(text);
    CHECK_OK(vp_bars_load_csv("tests/data/cr_only.csv", &o, &a, &ra));
    CHECK_OK(vp_bars_load_csv(lf, &o, &b, &rb));
    CHECK(a.n == 20 && ra.rows_read == 20 && tdu_bars_equal(&a, &b), "CR only: %lld bars, same as LF",
          (long long)a.n);
    vp_bars_free(&a);
    vp_bars_free(&b);

    /* A CR-only header row with a CR-only error: the line number counts CRs. */
    char bad[256];
    const char* cr_bad = "Time,Open,High,Low,Close\r2017-01-02,1,1,1,1\r2017-01-03,1,1,2,1\r";
    snprintf(bad, sizeof bad, "%s/cr_bad.csv", dir);
    CHECK(write_all(bad, cr_bad, strlen(cr_bad)), "write");
    CHECK_STATUS(vp_bars_load_csv(bad, &o, &a, NULL), VP_ERR_PARSE, "line 3, column 3 (High): high < low");

    /* A CR alone inside an LF file. */
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_mixed_line_ends.csv", &o, &a, NULL), VP_ERR_PARSE,
                 "tests/data/bad_mixed_line_ends.csv: line 3, column 6 (Volume): mixed line ends");
    o.skip_bad_rows = 1;
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_mixed_line_ends.csv", &o, &a, NULL), VP_ERR_PARSE,
                 "mixed line ends");
    tdu_rmtree(dir);
}

/* Valid numbers of any length parse, as strtod reads them. */
static void test_long_numbers(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    CHECK_OK(vp_bars_load_csv("tests/data/long_field_600_digits_valid.csv", &o, &b, NULL));
    CHECK(b.n == 20 && b.volume[3] == 1.0, "602-character volume on line 5 reads as 1 (%lld bars)", (long long)b.n);
    vp_bars_free(&b);

    /* 2000-character texts: zeros after the point, digits before it, a long exponent. */
    static char txt[3][2100];
    memset(txt, 0, sizeof txt);
    txt[0][0] = '1';
    txt[0][1] = '.';
    memset(txt[0] + 2, '0', 1997);
    txt[0][1999] = '7';
    memset(txt[1], '3', 300);
    txt[1][300] = 'e';
    txt[1][301] = '-';
    txt[1][302] = '3';
    txt[1][303] = '0';
    txt[1][304] = '0';
    txt[2][0] = '0';
    txt[2][1] = '.';
    memset(txt[2] + 2, '0', 1500);
    memcpy(txt[2] + 1502, "125e1503", 8);
    for (int i = 0; i < 3; ++i) {
        double v = -1.0, e = strtod(txt[i], NULL);
        int r = vp_parse_double(txt[i], strlen(txt[i]), &v);
        CHECK(r == 1 && memcmp(&v, &e, sizeof v) == 0, "text %d (%zu chars) -> %.17g, strtod %.17g", i,
              strlen(txt[i]), v, e);
    }
    double v = 0.0;
    CHECK(vp_parse_double(txt[0], 1999, &v) == 1 && v == 1.0, "1999 characters of 1.000...: %.17g", v);
    txt[0][1000] = 'x';
    CHECK(vp_parse_double(txt[0], strlen(txt[0]), &v) == 0, "a long text with a letter is not a number");
}

/* Bytes of a cache entry's header; its last 8 are the payload hash. */
#define CACHE_HEADER 2184

/* Rewrites bar `k` of one of the `ncols` columns (6, or 7 with a spread) of a cache entry and
 * the payload hash to match. */
static int tamper_cache(const char* cache, int ncols, int column, int64_t k, double value) {
    size_t len = 0;
    char* data = read_all(cache, &len);
    if (!data || len < CACHE_HEADER) return 0;
    int64_t n = (int64_t)(len - CACHE_HEADER) / (8 * ncols);
    memcpy(data + CACHE_HEADER + (size_t)(column * n + k) * 8, &value, 8);
    uint64_t h = 0;
    for (int c = 0; c < ncols; ++c) h = vp_hash64(data + CACHE_HEADER + (size_t)(c * n) * 8, (size_t)n * 8, h);
    memcpy(data + CACHE_HEADER - 8, &h, 8);
    int ok = write_all(cache, data, len);
    free(data);
    return ok;
}

/* A cache entry with a valid hash and invalid bars is damaged: warned about, never used. */
static void test_tampered_cache(void) {
    char dir[64], cache[128];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    vp_load_opts o = vp_load_opts_default();
    o.cache_dir = cache;
    const char* src = "examples/data/googl_1d_2009_2018.csv";
    vp_bars ref, b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(src, &o, &ref, &r));
    vp_log_set_callback(keep_warnings, NULL);

    /* NaN close (column 4), then a negative low (column 3). */
    const struct {
        int column;
        double value;
        const char* rule;
    } cases[] = {{4, NAN, "non-finite"}, {3, -1.0, "non-positive price"}, {2, 1e-9, "high < low"}};
    for (int i = 0; i < 3; ++i) {
        CHECK(tamper_cache(r.cache_path, 6, cases[i].column, 5, cases[i].value), "tamper %d", i);
        g_warnings = 0;
        g_last_warning[0] = '\0';
        vp_load_report rb;
        CHECK_OK(vp_bars_load_csv(src, &o, &b, &rb));
        CHECK(rb.from_cache == 0 && tdu_bars_equal(&b, &ref), "case %d: bars from the source, not the cache", i);
        CHECK(g_warnings == 1 && strstr(g_last_warning, "damaged") && strstr(g_last_warning, "bar 5") &&
                  strstr(g_last_warning, cases[i].rule),
              "case %d: warned %d: %s", i, g_warnings, g_last_warning);
        vp_bars_free(&b);
        CHECK_OK(vp_bars_load_csv(src, &o, &b, &rb));
        CHECK(rb.from_cache == 1 && tdu_bars_equal(&b, &ref), "case %d: cache rewritten", i);
        vp_bars_free(&b);
    }
    vp_log_set_callback(NULL, NULL);
    vp_bars_free(&ref);
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_nul_bytes);
    RUN_TEST(test_line_ends);
    RUN_TEST(test_long_numbers);
    RUN_TEST(test_tampered_cache);
    return vpt_finish();
}
