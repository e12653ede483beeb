/* The bars' spread: a `spread` column or `bid` and `ask` columns parsed into vp_bars.spread,
 * bad values refused with file, line, column and rule (or dropped under skip_bad_rows), the
 * header rules, views, copies, the CSV writer, and the binary cache (round trip, a tampered
 * spread refused, an entry without a spread never answering for one). */
#include "test_data_util.h"

#include "data/hash.h"
#include "vp_test.h"

/* Writes `text` as dir/name and loads it with opts into *b; returns the status. */
static vp_status load_text(const char* dir, const char* name, const char* text, const vp_load_opts* o, vp_bars* b,
                           vp_load_report* r, char* path, size_t cap) {
    if (!tdu_write(dir, name, text, path, cap)) return VP_ERR_IO;
    return vp_bars_load_csv(path, o, b, r);
}

static void test_spread_column(void) {
    char dir[64], path[256];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    vp_load_report r;
    /* a `Spread` column among the others, any case, in price units */
    CHECK_OK(load_text(dir, "s.csv",
                       "Time,Open,High,Low,Close,Volume,Spread\n"
                       "2020-01-01,1.5,2,1,1.75,10,0.25\n"
                       "2020-01-02,1.5,2,1,1.75,10,0\n"
                       "2020-01-03,1.5,2,1,1.75,10,1e-4\n",
                       &o, &b, &r, path, sizeof path));
    CHECK(b.n == 3 && b.spread != NULL && r.has_spread == 1, "n %lld spread %p has_spread %d", (long long)b.n,
          (void*)b.spread, r.has_spread);
    if (b.spread) CHECK(b.spread[0] == 0.25 && b.spread[1] == 0.0 && b.spread[2] == 1e-4, "values");
    vp_bars_free(&b);
    /* bid and ask columns: spread = ask - bid */
    CHECK_OK(load_text(dir, "ba.csv",
                       "date,open,high,low,close,bid,ask\n"
                       "2020-01-01,1.5,2,1,1.75,1.5,1.75\n"
                       "2020-01-02,1.5,2,1,1.75,1.25,1.25\n",
                       &o, &b, &r, path, sizeof path));
    CHECK(b.n == 2 && b.spread && r.has_spread == 1, "bid/ask: spread %p", (void*)b.spread);
    if (b.spread) CHECK(b.spread[0] == 0.25 && b.spread[1] == 0.0, "ask - bid: %g %g", b.spread[0], b.spread[1]);
    vp_bars_free(&b);
    /* no spread column: none */
    CHECK_OK(load_text(dir, "n.csv", "time,open,high,low,close\n2020-01-01,1,1,1,1\n", &o, &b, &r, path, sizeof path));
    CHECK(b.spread == NULL && r.has_spread == 0, "no spread column");
    vp_bars_free(&b);
    tdu_rmtree(dir);
}

/* Bad spread values: the rule, file, line and column named; skip_bad_rows drops the row. */
static void test_bad_spread(void) {
    char dir[64], path[256], want[400];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    vp_load_opts o = tdu_nocache();
    static const struct {
        const char* value; /* the second row's spread field */
        const char* rule;  /* column 7, Spread */
    } cases[] = {{"-0.1", "negative spread: -0.1"}, {"nan", "non-finite spread: \"nan\""},
                 {"inf", "non-finite spread: \"inf\""}, {"wide", "unparsable number: \"wide\" is not a number"}};
    for (int i = 0; i < 4; ++i) {
        char text[256];
        snprintf(text, sizeof text, "time,open,high,low,close,volume,spread\n2020-01-01,1,1,1,1,1,0.5\n"
                                    "2020-01-02,1,1,1,1,1,%s\n2020-01-03,1,1,1,1,1,0.5\n", cases[i].value);
        vp_bars b;
        vp_load_report r;
        CHECK(tdu_write(dir, "bad.csv", text, path, sizeof path), "write");
        snprintf(want, sizeof want, "%s: line 3, column 7 (spread): %s", path, cases[i].rule);
        CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, want);
        o.skip_bad_rows = 1;
        CHECK_OK(vp_bars_load_csv(path, &o, &b, &r));
        CHECK(b.n == 2 && r.rows_dropped == 1 && strstr(r.reasons[0], want) != NULL && b.spread &&
                  b.spread[1] == 0.5,
              "case %d: kept %lld dropped %lld: %s", i, (long long)b.n, (long long)r.rows_dropped, r.reasons[0]);
        vp_bars_free(&b);
        o.skip_bad_rows = 0;
    }
    /* bid and ask: ask below bid, a bid that is not a price */
    vp_bars b;
    CHECK(tdu_write(dir, "ba.csv", "time,open,high,low,close,Bid,Ask\n2020-01-01,1,1,1,1,1.25,1.5\n"
                    "2020-01-02,1,1,1,1,1.5,1.25\n", path, sizeof path), "write");
    snprintf(want, sizeof want, "%s: line 3, column 7 (Ask): ask < bid: ask 1.25 is below bid 1.5", path);
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, NULL), VP_ERR_PARSE, want);
    CHECK(tdu_write(dir, "ba.csv", "time,open,high,low,close,Bid,Ask\n2020-01-01,1,1,1,1,0,1.5\n", path, sizeof path),
          "write");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, NULL), VP_ERR_PARSE, "line 2, column 6 (Bid): non-positive price");
    /* the header: a spread column beside bid/ask is ambiguous; a bid needs an ask */
    CHECK(tdu_write(dir, "h.csv", "time,open,high,low,close,spread,bid,ask\n2020-01-01,1,1,1,1,0,1,1\n", path,
                    sizeof path), "write");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, NULL), VP_ERR_PARSE, "line 1, column 7 (bid): ambiguous spread column");
    CHECK(tdu_write(dir, "h.csv", "time,open,high,low,close,bid\n2020-01-01,1,1,1,1,1\n", path, sizeof path), "write");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, NULL), VP_ERR_PARSE,
                 "line 1, column \"ask\": missing column: the header has a \"bid\" column (6) but no \"ask\" column");
    o.skip_bad_rows = 1;
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, NULL), VP_ERR_PARSE, "missing column");
    tdu_rmtree(dir);
}

/* Views, copies and the CSV writer keep the spread; validation checks it. */
static void test_views_copies_write(void) {
    vp_bars b, c, v;
    CHECK_OK(vp_bars_alloc(&b, 5));
    CHECK_OK(vp_bars_alloc_spread(&b));
    for (int i = 0; i < 5; ++i) {
        b.time_ms[i] = 1577836800000LL + i * 60000LL;
        b.open[i] = b.high[i] = b.low[i] = b.close[i] = 100.0 + i;
        b.spread[i] = 0.125 * i;
    }
    CHECK_OK(vp_bars_validate(&b));
    CHECK_OK(vp_bars_slice(&b, 1, 4, &v));
    CHECK(v.spread == b.spread + 1 && v.n == 3, "view spread");
    CHECK_OK(vp_bars_copy(&b, 2, 5, &c));
    CHECK(c.owner == 1 && c.n == 3 && c.spread && c.spread != b.spread && c.spread[0] == 0.25 && c.spread[2] == 0.5 &&
              c.close[2] == 104.0,
          "copy");
    vp_bars_free(&c);
    /* written with a spread column, loaded back bit for bit */
    char dir[64], path[256];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    snprintf(path, sizeof path, "%s/w.csv", dir);
    CHECK_OK(vp_bars_save_csv(&b, path, -1));
    vp_load_opts o = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(path, &o, &c, NULL));
    CHECK(tdu_bars_equal(&b, &c), "save and load round trip with the spread");
    vp_bars_free(&c);
    tdu_rmtree(dir);
    /* a negative or non-finite spread breaks the bars */
    b.spread[3] = -0.5;
    CHECK_STATUS(vp_bars_validate(&b), VP_ERR_NUMERIC, "bar 3: spread -0.5");
    b.spread[3] = NAN;
    CHECK_STATUS(vp_bars_validate(&b), VP_ERR_NUMERIC, "non-finite or negative spread");
    vp_bars_free(&b);
}

/* Overwrites the spread (the seventh column) of bar k in a cache entry and re-hashes it. */
static int tamper_spread(const char* cache, int64_t k, double value) {
    const size_t H = 2184;
    FILE* f = fopen(cache, "r+b");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    char* data = (char*)malloc((size_t)len);
    rewind(f);
    int ok = data && fread(data, 1, (size_t)len, f) == (size_t)len && (size_t)len > H;
    if (ok) {
        int64_t n = (int64_t)((size_t)len - H) / 56;
        memcpy(data + H + (size_t)(6 * n + k) * 8, &value, 8);
        uint64_t h = 0;
        for (int c = 0; c < 7; ++c) h = vp_hash64(data + H + (size_t)(c * n) * 8, (size_t)n * 8, h);
        memcpy(data + H - 8, &h, 8);
        rewind(f);
        ok = fwrite(data, 1, (size_t)len, f) == (size_t)len;
    }
    free(data);
    return fclose(f) == 0 && ok;
}

static int g_warn = 0;
static char g_msg[600];
static void keep(vp_log_level level, const char* msg, void* user) {
    (void)user;
    if (level < VP_LOG_WARN) return;
    g_warn++;
    snprintf(g_msg, sizeof g_msg, "%s", msg);
}

static void test_cache(void) {
    char dir[64], cache[128], path[256];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    vp_load_opts o = vp_load_opts_default();
    o.cache_dir = cache;
    const char* text = "time,open,high,low,close,volume,spread\n2020-01-01,1,1,1,1,1,0.5\n"
                       "2020-01-02,1,1,1,1,1,0.25\n2020-01-03,1,1,1,1,1,0.75\n";
    vp_bars a, b;
    vp_load_report ra, rb;
    CHECK_OK(load_text(dir, "c.csv", text, &o, &a, &ra, path, sizeof path));
    CHECK_OK(vp_bars_load_csv(path, &o, &b, &rb));
    CHECK(ra.from_cache == 0 && rb.from_cache == 1 && rb.has_spread == 1 && tdu_bars_equal(&a, &b),
          "cache round trip with the spread");
    vp_bars_free(&b);
    /* a cache entry whose spread was changed and re-hashed is refused, the source parsed again */
    vp_log_set_callback(keep, NULL);
    g_warn = 0;
    CHECK(tamper_spread(rb.cache_path, 1, -1.0), "tamper");
    CHECK_OK(vp_bars_load_csv(path, &o, &b, &rb));
    CHECK(rb.from_cache == 0 && tdu_bars_equal(&a, &b), "source bars after a tampered entry");
    CHECK(g_warn == 1 && strstr(g_msg, "damaged") && strstr(g_msg, "bar 1: spread -1"), "warned %d: %s", g_warn,
          g_msg);
    vp_log_set_callback(NULL, NULL);
    vp_bars_free(&b);
    vp_bars_free(&a);
    /* the same file with its spread column renamed (same size, other content) is parsed again,
     * not answered by the entry with a spread */
    CHECK_OK(load_text(dir, "c.csv",
                       "time,open,high,low,close,volume,extras\n2020-01-01,1,1,1,1,1,0.5\n"
                       "2020-01-02,1,1,1,1,1,0.25\n2020-01-03,1,1,1,1,1,0.75\n",
                       &o, &b, &rb, path, sizeof path));
    CHECK(rb.from_cache == 0 && b.spread == NULL && rb.has_spread == 0, "a changed source is parsed");
    vp_bars_free(&b);
    CHECK_OK(vp_bars_load_csv(path, &o, &b, &rb));
    CHECK(rb.from_cache == 1 && b.spread == NULL, "its entry has no spread");
    vp_bars_free(&b);
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_spread_column);
    RUN_TEST(test_bad_spread);
    RUN_TEST(test_views_copies_write);
    RUN_TEST(test_cache);
    return vpt_finish();
}
