/* Tests of CSV validation: every bad-file case fails with a message naming the file, the
 * line, the column and the rule; skip_bad_rows drops and counts instead. */
#include "test_data_util.h"

#include "vp_test.h"

/* One bad file and what its message must say. */
typedef struct bad_case {
    const char* file;   /* under tests/data */
    const char* where;  /* "line N, column C (Name)" or "line N" */
    const char* rule;   /* the rule's name in the message */
} bad_case;

static const bad_case CASES[] = {
    {"bad_time_order.csv", "line 4, column 1 (Time)", "time not increasing"},
    {"bad_duplicate_time.csv", "line 3, column 1 (Time)", "time not increasing"},
    {"bad_high_low.csv", "line 3, column 3 (High)", "high < low"},
    {"bad_open_range.csv", "line 4, column 2 (Open)", "open outside [low, high]"},
    {"bad_close_range.csv", "line 2, column 5 (Close)", "close outside [low, high]"},
    {"bad_nonpositive.csv", "line 3, column 4 (Low)", "non-positive price"},
    {"bad_nonfinite.csv", "line 3, column 5 (Close)", "non-finite price"},
    {"bad_negative_volume.csv", "line 3, column 6 (Volume)", "negative volume"},
    {"bad_missing_column.csv", "line 1, column \"close\"", "missing column"},
    {"bad_field_count.csv", "line 3, column 6 (Volume)", "wrong field count"},
    {"bad_extra_field.csv", "line 2, column 7 (beyond the header)", "wrong field count"},
    {"bad_empty.csv", "line 1", "empty file"},
    {"bad_header_only.csv", "line 2", "header only"},
    {"bad_number.csv", "line 3, column 2 (Open)", "unparsable number"},
    {"bad_time.csv", "line 2, column 1 (Time)", "unparsable time"},
    {"bad_blank_line.csv", "line 3, column 1 (Time)", "wrong field count"},
};

static void test_each_bad_file(void) {
    vp_load_opts o = tdu_nocache();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; ++i) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/%s", CASES[i].file);
        vp_bars b;
        b.n = 99;
        vp_clear_error();
        vp_status s = vp_bars_load_csv(path, &o, &b, NULL);
        const char* m = vp_last_error();
        /* The status, an empty result, and a message naming file, line, column and rule. */
        CHECK(s == VP_ERR_PARSE, "%s: status %s", path, vp_status_name(s));
        CHECK(b.n == 0 && b.time_ms == NULL, "%s: output left empty", path);
        CHECK(strstr(m, path) != NULL, "%s: message lacks the file: %s", path, m);
        CHECK(strstr(m, CASES[i].where) != NULL, "%s: message lacks '%s': %s", path, CASES[i].where, m);
        CHECK(strstr(m, CASES[i].rule) != NULL, "%s: message lacks rule '%s': %s", path, CASES[i].rule, m);
        vp_bars_free(&b);
    }
}

/* Row-level problems are skippable; file-level ones are not. */
static void test_skip_bad_rows(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    vp_load_report r;

    /* Without skipping, the first bad row (line 3) fails the load. */
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_mixed.csv", &o, &b, &r), VP_ERR_PARSE, "line 3, column 3 (High)");

    /* With skipping: lines 3, 5, 6, 7, 9 dropped, 2, 4, 8, 10 kept. */
    o.skip_bad_rows = 1;
    CHECK_OK(vp_bars_load_csv("tests/data/bad_mixed.csv", &o, &b, &r));
    CHECK(r.rows_read == 9 && r.rows_kept == 4 && r.rows_dropped == 5 && b.n == 4, "read %lld kept %lld dropped %lld",
          (long long)r.rows_read, (long long)r.rows_kept, (long long)r.rows_dropped);
    CHECK(r.n_reasons == 5, "reasons %d", r.n_reasons);
    const char* expect[5] = {"line 3, column 3 (High): high < low", "line 5, column 6 (Volume): wrong field count",
                             "line 6, column 6 (Volume): negative volume",
                             "line 7, column 1 (Time): time not increasing",
                             "line 9, column 2 (Open): unparsable number"};
    for (int i = 0; i < 5 && i < r.n_reasons; ++i)
        CHECK(strstr(r.reasons[i], expect[i]) != NULL && strstr(r.reasons[i], "bad_mixed.csv") != NULL,
              "reason %d: %s", i, r.reasons[i]);
    if (b.n == 4) {
        CHECK(b.close[0] == 1.05227 && b.close[1] == 1.05281 && b.close[2] == 1.05260 && b.close[3] == 1.05270,
              "kept rows in order, unchanged");
        CHECK(b.volume[3] == 800.0 && b.time_ms[3] - b.time_ms[2] == 2 * 3600000, "last kept bar");
    }
    vp_bars_free(&b);

    /* File-level errors stay errors. */
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_missing_column.csv", &o, &b, &r), VP_ERR_PARSE, "missing column");
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_header_only.csv", &o, &b, &r), VP_ERR_PARSE, "header only");
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_empty.csv", &o, &b, &r), VP_ERR_PARSE, "empty file");

    /* A file whose every row is bad fails, quoting the first reason. */
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_time.csv", &o, &b, &r), VP_ERR_PARSE, "all 1 data rows were dropped");
    CHECK(strstr(vp_last_error(), "unparsable time") != NULL, "first reason quoted: %s", vp_last_error());
}

/* More than VP_LOAD_MAX_REASONS bad rows: all counted, the first few kept. */
static void test_many_bad_rows(void) {
    char dir[64], path[512];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    char text[8192] = "time,open,high,low,close\n";
    size_t used = strlen(text);
    for (int i = 0; i < 40; ++i)
        used += (size_t)snprintf(text + used, sizeof text - used, "%d,1,%s,1,1\n", 1500000000 + 60 * i,
                                 i % 3 == 0 ? "0.5" : "1.5");
    CHECK(tdu_write(dir, "many.csv", text, path, sizeof path), "write");
    vp_load_opts o = tdu_nocache();
    o.skip_bad_rows = 1;
    vp_bars b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(path, &o, &b, &r));
    CHECK(r.rows_read == 40 && r.rows_dropped == 14 && r.rows_kept == 26 && b.n == 26, "dropped %lld",
          (long long)r.rows_dropped);
    CHECK(r.n_reasons == VP_LOAD_MAX_REASONS, "reasons capped: %d", r.n_reasons);
    CHECK(strstr(r.reasons[0], "line 2, column 3 (high): high < low") != NULL, "first: %s", r.reasons[0]);
    CHECK(strstr(r.reasons[7], "line 23,") != NULL, "eighth: %s", r.reasons[7]);
    vp_bars_free(&b);

    /* Header problems: duplicate and ambiguous columns, an unclosed quote. */
    CHECK(tdu_write(dir, "dup.csv", "time,open,high,low,close,Open\n1500000000,1,1,1,1,1\n", path, sizeof path), "w");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "line 1, column 6 (Open): duplicate column");
    CHECK(tdu_write(dir, "amb.csv", "date,timestamp,open,high,low,close\n", path, sizeof path), "w");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "column 2 (timestamp): ambiguous time column");
    CHECK(tdu_write(dir, "nt.csv", "when,open,high,low,close\n1500000000,1,1,1,1\n", path, sizeof path), "w");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "missing column: the header has no \"time\"");
    CHECK(tdu_write(dir, "q.csv", "time,open,high,low,close\n1500000000,\"1,1,1,1\n", path, sizeof path), "w");
    o.skip_bad_rows = 0;
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "line 2, column 2 (open): unparsable field");
    CHECK(tdu_write(dir, "ws.csv", " \n\n  \n", path, sizeof path), "w");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "empty file");
    CHECK(tdu_write(dir, "inf.csv", "time,open,high,low,close,volume\n1500000000,1,1,1,1,1e999\n", path, sizeof path),
          "w");
    CHECK_STATUS(vp_bars_load_csv(path, &o, &b, &r), VP_ERR_PARSE, "column 6 (volume): non-finite volume");
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_each_bad_file);
    RUN_TEST(test_skip_bad_rows);
    RUN_TEST(test_many_bad_rows);
    return vpt_finish();
}
