/* Tests of CSV loading: the shipped files, time formats, number parsing, CSV variants. */
#include "test_data_util.h"

#include "data/data_internal.h"
#include "vp_test.h"

#define EURUSD "examples/data/eurusd_1h_2017.csv"
#define GOOGL "examples/data/googl_1d_2009_2018.csv"

static void test_eurusd_loads(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(EURUSD, &o, &b, &r));
    CHECK(b.n == 6225, "EURUSD rows %lld", (long long)b.n);
    CHECK(r.rows_read == 6225 && r.rows_kept == 6225 && r.rows_dropped == 0 && r.n_reasons == 0,
          "report %lld %lld %lld", (long long)r.rows_read, (long long)r.rows_kept, (long long)r.rows_dropped);
    CHECK(r.has_volume == 1 && r.from_cache == 0 && r.cache_path[0] == '\0', "flags");
    CHECK(strcmp(r.time_format, "DD.MM.YYYY HH:MM:SS[.mmm]") == 0, "format %s", r.time_format);
    if (b.n == 6225) {
        /* 01.01.2017 22:00:00.000,1.05236,1.05253,1.05221,1.05227,143539993.3 */
        CHECK(b.time_ms[0] == INT64_C(1483308000000), "first time %lld", (long long)b.time_ms[0]);
        CHECK(b.open[0] == 1.05236 && b.high[0] == 1.05253 && b.low[0] == 1.05221 && b.close[0] == 1.05227,
              "first bar");
        CHECK(b.volume[0] == 143539993.3, "first volume %.17g", b.volume[0]);
        /* 29.12.2017 21:00:00.000,1.19984,1.2013,1.19931,1.20075,4885529785 */
        int64_t l = b.n - 1;
        CHECK(b.time_ms[l] == INT64_C(1514581200000), "last time %lld", (long long)b.time_ms[l]);
        CHECK(b.open[l] == 1.19984 && b.high[l] == 1.2013 && b.low[l] == 1.19931 && b.close[l] == 1.20075, "last bar");
        CHECK(b.volume[l] == 4885529785.0, "last volume %.17g", b.volume[l]);
    }
    /* Hourly bars with weekend gaps. */
    CHECK(r.spacing.interval_ms == 3600000, "interval %lld", (long long)r.spacing.interval_ms);
    CHECK(r.spacing.gaps >= 50 && r.spacing.gaps < 70, "gaps %lld", (long long)r.spacing.gaps);
    CHECK(r.spacing.largest_gap_ms >= 49 * 3600000LL, "largest gap %lld", (long long)r.spacing.largest_gap_ms);
    CHECK_OK(vp_bars_validate(&b));
    vp_bars_free(&b);
    CHECK(b.n == 0 && b.time_ms == NULL, "free zeroes");
}

static void test_googl_loads(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(GOOGL, &o, &b, &r));
    CHECK(b.n == 2335 && r.rows_read == 2335, "GOOGL rows %lld", (long long)b.n);
    CHECK(strcmp(r.time_format, "ISO date") == 0, "format %s", r.time_format);
    if (b.n == 2335) {
        /* 2009-05-22,198.528534,199.524521,196.196198,196.946945,196.946945,3433700 */
        CHECK(b.time_ms[0] == INT64_C(1242950400000), "first time %lld", (long long)b.time_ms[0]);
        CHECK(b.open[0] == 198.528534 && b.high[0] == 199.524521 && b.low[0] == 196.196198 &&
                  b.close[0] == 196.946945 && b.volume[0] == 3433700.0,
              "first bar");
        /* 2018-08-29,1255.000000,1267.170044,1252.800049,1264.650024,1264.650024,1846300 */
        int64_t l = b.n - 1;
        CHECK(b.time_ms[l] == INT64_C(1535500800000), "last time %lld", (long long)b.time_ms[l]);
        CHECK(b.open[l] == 1255.0 && b.high[l] == 1267.170044 && b.low[l] == 1252.800049 && b.close[l] == 1264.650024 &&
                  b.volume[l] == 1846300.0,
              "last bar");
    }
    CHECK(r.spacing.interval_ms == 86400000, "daily interval %lld", (long long)r.spacing.interval_ms);
    CHECK(r.spacing.gaps > 400, "weekends are gaps: %lld", (long long)r.spacing.gaps);
    vp_bars_free(&b);
}

static int64_t tp(const char* s, vp_time_format* f) {
    int64_t ms = INT64_MIN;
    if (!vp_time_parse(s, strlen(s), &ms, f)) return INT64_MIN;
    return ms;
}

static void test_time_formats(void) {
    vp_time_format f;
    const int64_t T = INT64_C(1483326245678); /* 2017-01-02T03:04:05.678Z */
    const int64_t D = INT64_C(1483315200000); /* 2017-01-02 */
    /* ISO date and date-time: 'T' or space, fractions, Z and offsets. */
    CHECK(tp("2017-01-02", &f) == D && f == VP_TIME_ISO_DATE, "ISO date");
    CHECK(tp("2017-01-02T03:04:05.678", &f) == T && f == VP_TIME_ISO_DATETIME, "ISO T");
    CHECK(tp("2017-01-02 03:04:05.678Z", &f) == T, "ISO space Z");
    CHECK(tp("2017-01-02T03:04:05.678912Z", &f) == T, "microseconds truncated");
    CHECK(tp("2017-01-02T03:04:05,678", &f) == T, "comma fraction");
    CHECK(tp("2017-01-02T03:04", &f) == T - 5678, "no seconds");
    CHECK(tp("2017-01-02T04:04:05.678+01:00", &f) == T, "offset +01:00");
    CHECK(tp("2017-01-02T01:34:05.678-0130", &f) == T, "offset -0130");
    CHECK(tp("  2017-01-02  ", &f) == D, "blanks trimmed");
    /* DD.MM.YYYY with optional time and milliseconds. */
    CHECK(tp("02.01.2017 03:04:05.678", &f) == T && f == VP_TIME_DMY, "DMY ms");
    CHECK(tp("02.01.2017 03:04:05", &f) == T - 678, "DMY s");
    CHECK(tp("02.01.2017", &f) == D, "DMY date");
    /* Unix seconds and milliseconds by magnitude. */
    CHECK(tp("1483326245", &f) == T - 678 && f == VP_TIME_UNIX_S, "unix s");
    CHECK(tp("1483326245.678", &f) == T && f == VP_TIME_UNIX_S, "unix s fraction");
    CHECK(tp("1483326245678", &f) == T && f == VP_TIME_UNIX_MS, "unix ms");
    CHECK(tp("100000000", &f) == INT64_C(100000000000) && f == VP_TIME_UNIX_S, "smallest seconds");
    CHECK(tp("100000000000", &f) == INT64_C(100000000000) && f == VP_TIME_UNIX_MS, "smallest ms");
    /* Leap days, epoch edges. */
    CHECK(tp("2000-02-29", &f) == INT64_C(951782400000), "leap day 2000");
    CHECK(tp("1969-12-31T23:59:59.999Z", &f) == -1, "before epoch");
    /* Refused: impossible dates and times, ambiguous or out-of-range numbers, junk. */
    const char* bad[] = {"2017-02-29", "1900-02-29", "2017-13-01", "2017-00-10", "2017-01-32", "2017-01-02T24:00",
                         "2017-01-02T10:60",  "2017-01-02T10:00:60", "2017-01-02X10:00", "2017-01-02T10:00:00Q",
                         "2017-01-02T10:00.5", "31.04.2017", "02.01.17", "20170102", "99999999", "100000000000000",
                         "1483326245678.5", "-1483326245", "", "abc", "2017-1-2", "02.01.2017T03:04:05",
                         "2017-01-02T03:04:05.", "2017-01-02T03:04:05+25:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        CHECK(tp(bad[i], NULL) == INT64_MIN, "'%s' should be refused", bad[i]);
    /* Formatting and the civil-day count. */
    char buf[40];
    CHECK(strcmp(vp_time_format_iso(T, buf, sizeof buf), "2017-01-02T03:04:05.678Z") == 0, "iso %s", buf);
    CHECK(strcmp(vp_time_format_iso(D, buf, sizeof buf), "2017-01-02T00:00:00Z") == 0, "iso %s", buf);
    CHECK(strcmp(vp_time_format_iso(-1, buf, sizeof buf), "1969-12-31T23:59:59.999Z") == 0, "iso %s", buf);
    CHECK(vp_days_from_civil(1970, 1, 1) == 0 && vp_days_from_civil(2000, 3, 1) == 11017, "civil days");
    for (int64_t d = -719000; d < 2930000; d += 1999) { /* years 1..9999 */
        int64_t ms = d * 86400000 + 12345;
        vp_time_format_iso(ms, buf, sizeof buf);
        CHECK(tp(buf, NULL) == ms, "round trip %s", buf);
    }
}

static void test_number_parsing(void) {
    /* Exact agreement with strtod (C locale) on assorted decimal forms. */
    const char* ok[] = {"1.05236", "0", "-0.0", "+3.5", "1e3", "1E-3", "2.5e+10", ".5", "5.", "0.000123",
                        "143539993.3", "4885529785", "123456789012345678901234", "0.1234567890123456789",
                        "1.7976931348623157e308", "4.9e-324", "1e-400", "9007199254740993", "1e23", "3.0e22"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
        double v = -1.0;
        int r = vp_parse_double(ok[i], strlen(ok[i]), &v);
        double e = strtod(ok[i], NULL);
        CHECK(r == 1 && memcmp(&v, &e, sizeof v) == 0, "'%s' -> %.17g, strtod %.17g", ok[i], v, e);
    }
    /* Many random values printed with 1..17 digits read back as strtod reads them. */
    uint64_t s = 12345;
    int mismatches = 0;
    for (int i = 0; i < 200000; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double x = (double)(s >> 11) / 9007199254740992.0 * pow(10.0, (double)((int)(s % 40) - 20));
        char txt[64];
        snprintf(txt, sizeof txt, "%.*g", 1 + (int)(s % 17), x);
        double v, e = strtod(txt, NULL);
        if (!vp_parse_double(txt, strlen(txt), &v) || memcmp(&v, &e, sizeof v) != 0) ++mismatches;
    }
    CHECK(mismatches == 0, "%d mismatches against strtod", mismatches);
    /* Specials and refusals. */
    double v;
    CHECK(vp_parse_double("NaN", 3, &v) == 1 && isnan(v), "nan");
    CHECK(vp_parse_double("-inf", 4, &v) == 1 && isinf(v) && v < 0, "-inf");
    CHECK(vp_parse_double("Infinity", 8, &v) == 1 && isinf(v), "infinity");
    const char* bad[] = {"", "-", ".", "e5", "1e", "1e+", "1.2.3", "1,5", "0x10", "1 2", "abc", "--1", "1e5x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        CHECK(vp_parse_double(bad[i], strlen(bad[i]), &v) == 0, "'%s' should be refused", bad[i]);
}

static void test_hash_vectors(void) {
    /* xxHash's published XXH64 values (seed 0). */
    CHECK(vp_hash64("", 0, 0) == 0xEF46DB3751D8E999ULL, "empty %016llx", (unsigned long long)vp_hash64("", 0, 0));
    CHECK(vp_hash64("a", 1, 0) == 0xD24EC4F1A98C6E5BULL, "a");
    CHECK(vp_hash64("abc", 3, 0) == 0x44BC2CF5AD770999ULL, "abc");
    const char* s = "Nobody inspects the spammish repetition";
    CHECK(vp_hash64(s, strlen(s), 0) == 0xFBCEA83C8A378BF1ULL, "long %016llx",
          (unsigned long long)vp_hash64(s, strlen(s), 0));
}

/* Loads text written to a temp file; returns the status. */
static vp_status load_text(const char* dir, const char* text, vp_bars* b, vp_load_report* r) {
    char path[512];
    if (!tdu_write(dir, "t.csv", text, path, sizeof path)) return VP_ERR_IO;
    vp_load_opts o = tdu_nocache();
    return vp_bars_load_csv(path, &o, b, r);
}

static void test_csv_variants(void) {
    char dir[64];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    vp_bars b;
    vp_load_report r;

    /* CRLF line ends, a byte-order mark, shuffled and extra columns, case-insensitive names. */
    CHECK_OK(load_text(dir,
                       "\xEF\xBB\xBFTIMESTAMP,Close,Adj Close,oPen,LOW,High,Volume\r\n"
                       "2017-01-02T00:00:00Z,1.5,9.9,1.2,1.1,1.6,10\r\n"
                       "2017-01-02T01:00:00Z,1.7,9.9,1.5,1.4,1.8,0\r\n\r\n\r\n",
                       &b, &r));
    CHECK(b.n == 2 && r.rows_read == 2, "rows %lld", (long long)b.n);
    if (b.n == 2)
        CHECK(b.open[0] == 1.2 && b.high[0] == 1.6 && b.low[0] == 1.1 && b.close[0] == 1.5 && b.volume[0] == 10 &&
                  b.time_ms[1] - b.time_ms[0] == 3600000,
              "columns by name, Adj Close ignored");
    vp_bars_free(&b);

    /* No volume column: zeros; semicolons; quoted fields; an unnamed first column of Unix seconds. */
    CHECK_OK(load_text(dir, ";\"open\";high;low;close\n1483315200;\"1.0\";2;0.5;1.5\n1483318800;1.5;2; 0.5 ;1\n", &b,
                       &r));
    CHECK(b.n == 2 && r.has_volume == 0 && b.volume[0] == 0.0 && b.volume[1] == 0.0, "no volume");
    CHECK(b.n == 2 && b.time_ms[0] == INT64_C(1483315200000) && b.open[0] == 1.0 && b.low[1] == 0.5, "unnamed time");
    CHECK(strcmp(r.time_format, "Unix seconds") == 0, "format %s", r.time_format);
    vp_bars_free(&b);

    /* A date column and a time column side by side are joined; tabs delimit. */
    CHECK_STATUS(load_text(dir, "Date\tTime\tOpen\tHigh\tLow\tClose\n2017.01.02\t10:00\t1\t1\t1\t1\n", &b, &r),
                 VP_ERR_PARSE, "line 2, column 2 (Time): unparsable time");
    CHECK_OK(load_text(
        dir, "Date\tTime\tOpen\tHigh\tLow\tClose\n02.01.2017\t10:00\t1\t1\t1\t1\n2017-01-02\t11:00:30\t1\t2\t1\t2\n",
        &b, &r));
    CHECK(b.n == 2 && b.time_ms[0] == INT64_C(1483351200000) && b.time_ms[1] == INT64_C(1483354830000),
          "date + time joined: %lld %lld", (long long)(b.n ? b.time_ms[0] : 0),
          (long long)(b.n > 1 ? b.time_ms[1] : 0));
    vp_bars_free(&b);

    /* Unix milliseconds, no trailing newline, a single row. */
    CHECK_OK(load_text(dir, "time,open,high,low,close,volume\n1483326245678,1,1,1,1,0", &b, &r));
    CHECK(b.n == 1 && b.time_ms[0] == INT64_C(1483326245678) && r.spacing.interval_ms == 0, "unix ms");
    vp_bars_free(&b);

    /* Views share the arrays and are never freed through. */
    vp_load_opts o = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(GOOGL, &o, &b, NULL));
    vp_bars v;
    CHECK_OK(vp_bars_slice(&b, 10, 20, &v));
    CHECK(v.n == 10 && v.owner == 0 && v.close == b.close + 10 && v.time_ms[0] == b.time_ms[10], "view");
    vp_bars_free(&v);
    CHECK(b.close != NULL && b.n == 2335, "parent intact after freeing the view");
    CHECK_STATUS(vp_bars_slice(&b, 20, 20, &v), VP_ERR_INVALID_ARG, "non-empty");
    CHECK_STATUS(vp_bars_slice(&b, 0, 2336, &v), VP_ERR_INVALID_ARG, "inside");
    vp_bars_free(&b);
    tdu_rmtree(dir);
}

static void test_save_round_trip(void) {
    char dir[64], path[512];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    vp_bars a, b;
    vp_load_opts o = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(EURUSD, &o, &a, NULL));
    snprintf(path, sizeof path, "%s/rt.csv", dir);
    CHECK_OK(vp_bars_save_csv(&a, path, -1));
    CHECK_OK(vp_bars_load_csv(path, &o, &b, NULL));
    CHECK(tdu_bars_equal(&a, &b), "exact round trip");
    vp_bars_free(&b);
    CHECK_OK(vp_bars_save_csv(&a, path, 5));
    CHECK_OK(vp_bars_load_csv(path, &o, &b, NULL));
    CHECK(b.n == a.n && b.close[100] == a.close[100] && b.volume[0] == 143539993.3, "5 decimals");
    vp_bars_free(&a);
    vp_bars_free(&b);
    CHECK_STATUS(vp_bars_load_csv(dir, &o, &a, NULL), VP_ERR_IO, dir);
    CHECK_STATUS(vp_bars_load_csv("no/such/file.csv", &o, &a, NULL), VP_ERR_IO, "no/such/file.csv");
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_eurusd_loads);
    RUN_TEST(test_googl_loads);
    RUN_TEST(test_time_formats);
    RUN_TEST(test_number_parsing);
    RUN_TEST(test_hash_vectors);
    RUN_TEST(test_csv_variants);
    RUN_TEST(test_save_round_trip);
    return vpt_finish();
}
