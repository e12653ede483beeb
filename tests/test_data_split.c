/* Tests of time-based splits and walk-forward folds, edge cases included. */
#include <stdint.h>
#include <stdio.h>

#include "vp_test.h"
#include "vulpes/split.h"

static int span_is(vp_span s, int64_t b, int64_t e) { return s.begin == b && s.end == e; }

static void test_fractions(void) {
    vp_split_cfg c = {0};
    c.train_frac = 0.6;
    c.val_frac = 0.2;
    c.test_frac = 0.2;
    vp_split s;
    /* 1000 bars, no warm-up or embargo: 600 / 200 / 200. */
    CHECK_OK(vp_split_make(1000, &c, &s));
    CHECK(span_is(s.train, 0, 600) && span_is(s.val, 600, 800) && span_is(s.test, 800, 1000), "60/20/20");
    /* Warm-up before train, embargo between spans; rounding leftovers go to test. */
    c.warmup = 100;
    c.embargo = 5;
    CHECK_OK(vp_split_make(1001, &c, &s));
    /* usable = 1001 - 100 - 10 = 891: train 534, val 178, test 179. */
    CHECK(span_is(s.train, 100, 634) && span_is(s.val, 639, 817) && span_is(s.test, 822, 1001),
          "train [%lld,%lld) val [%lld,%lld) test [%lld,%lld)", (long long)s.train.begin, (long long)s.train.end,
          (long long)s.val.begin, (long long)s.val.end, (long long)s.test.begin, (long long)s.test.end);
    CHECK_OK(vp_split_check(&s, 1001, 100));
    /* Fractions summing below 1 leave the tail unused. */
    c.test_frac = 0.1;
    CHECK_OK(vp_split_make(1001, &c, &s));
    CHECK(vp_span_len(s.test) == 89 && s.test.end < 1001, "test %lld", (long long)vp_span_len(s.test));
    /* Errors: zero, negative or too large fractions, too little data. */
    c.test_frac = 0.0;
    CHECK_STATUS(vp_split_make(1001, &c, &s), VP_ERR_INVALID_ARG, "zero length");
    c.test_frac = 0.3;
    c.train_frac = 0.8;
    CHECK_STATUS(vp_split_make(1001, &c, &s), VP_ERR_INVALID_ARG, "sum to 1.3");
    c.train_frac = 0.6;
    c.test_frac = 0.2;
    CHECK_STATUS(vp_split_make(111, &c, &s), VP_ERR_INVALID_ARG, "too little data: 111 bars leave 1");
    CHECK_STATUS(vp_split_make(113, &c, &s), VP_ERR_INVALID_ARG, "give train 1, val 0");
    CHECK_OK(vp_split_make(115, &c, &s));
    c.embargo = -1;
    CHECK_STATUS(vp_split_make(1000, &c, &s), VP_ERR_INVALID_ARG, "must be >= 0");
}

static void test_lengths(void) {
    vp_split_cfg c = {0};
    c.train_len = 500;
    c.val_len = 100;
    c.test_len = 50;
    c.embargo = 10;
    c.warmup = 300;
    vp_split s;
    /* Placed so that test ends at the last bar. */
    CHECK_OK(vp_split_make(2000, &c, &s));
    CHECK(span_is(s.test, 1950, 2000) && span_is(s.val, 1840, 1940) && span_is(s.train, 1330, 1830), "lengths");
    /* Exactly enough: train starts right after the warm-up. */
    CHECK_OK(vp_split_make(300 + 500 + 100 + 50 + 20, &c, &s));
    CHECK(s.train.begin == 300, "tight fit starts at the warm-up");
    CHECK_STATUS(vp_split_make(300 + 500 + 100 + 50 + 19, &c, &s), VP_ERR_INVALID_ARG, "needs 970");
    /* Zero or missing lengths. */
    c.val_len = 0;
    CHECK_STATUS(vp_split_make(2000, &c, &s), VP_ERR_INVALID_ARG, "zero length");
    c.val_len = -5;
    CHECK_STATUS(vp_split_make(2000, &c, &s), VP_ERR_INVALID_ARG, "must be > 0");
}

static void test_check(void) {
    vp_split s = {{100, 200}, {200, 300}, {300, 400}};
    CHECK_OK(vp_split_check(&s, 400, 100));
    CHECK_STATUS(vp_split_check(&s, 399, 100), VP_ERR_INVALID_ARG, "test span [300, 400) ends past");
    CHECK_STATUS(vp_split_check(&s, 400, 101), VP_ERR_INVALID_ARG,
                 "train span [100, 200) starts inside the 101 warm-up");
    s.val.begin = 199;
    CHECK_STATUS(vp_split_check(&s, 400, 0), VP_ERR_INVALID_ARG, "val span [199, 300) overlaps");
    s.val.begin = 200;
    s.test = (vp_span){150, 180};
    CHECK_STATUS(vp_split_check(&s, 400, 0), VP_ERR_INVALID_ARG, "out of order");
    s.test = (vp_span){300, 300};
    CHECK_STATUS(vp_split_check(&s, 400, 0), VP_ERR_INVALID_ARG, "test span [300, 300) is empty");
    /* Warm-up comes from before a span, never after. */
    vp_span w;
    CHECK_OK(vp_span_with_warmup((vp_span){400, 500}, 383, &w));
    CHECK(span_is(w, 17, 500), "warm span");
    CHECK_STATUS(vp_span_with_warmup((vp_span){100, 500}, 383, &w), VP_ERR_INVALID_ARG, "only 100 bars before it");
}

static void test_walkforward(void) {
    vp_walkforward_cfg c = {0};
    c.train_len = 1000;
    c.val_len = 200;
    c.test_len = 200;
    c.step = 200;
    c.embargo = 10;
    c.warmup = 383;
    int64_t k = -1;
    vp_split f[16];
    /* One fold needs 383 + 1000 + 200 + 200 + 20 = 1803 bars; each further fold 200 more. */
    CHECK_OK(vp_walkforward_make(1803, &c, f, 16, &k));
    CHECK(k == 1 && span_is(f[0].train, 383, 1383) && span_is(f[0].val, 1393, 1593) && span_is(f[0].test, 1603, 1803),
          "one fold");
    CHECK_OK(vp_walkforward_make(2602, &c, f, 16, &k));
    CHECK(k == 4, "folds %lld", (long long)k);
    for (int64_t i = 0; i < k; ++i) {
        CHECK_OK(vp_split_check(&f[i], 2602, 383));
        CHECK(f[i].train.begin == 383 + 200 * i && vp_span_len(f[i].train) == 1000, "rolling fold %lld", (long long)i);
        if (i > 0) CHECK(f[i].test.begin == f[i - 1].test.end, "test spans tile the out-of-sample period");
    }
    /* Count only, then a capped write. */
    CHECK_OK(vp_walkforward_make(2602, &c, NULL, 0, &k));
    CHECK(k == 4, "count only");
    CHECK_OK(vp_walkforward_make(2602, &c, f, 2, &k));
    CHECK(k == 4, "count beyond cap");
    /* Anchored: train always starts at the warm-up and grows by step. */
    c.anchored = 1;
    CHECK_OK(vp_walkforward_make(2602, &c, f, 16, &k));
    CHECK(k == 4 && f[3].train.begin == 383 && vp_span_len(f[3].train) == 1600 && span_is(f[3].val, 1993, 2193) &&
              span_is(f[3].test, 2203, 2403),
          "anchored");
    /* Errors: too little data, zero lengths, overlapping test spans. */
    c.anchored = 0;
    CHECK_STATUS(vp_walkforward_make(1802, &c, f, 16, &k), VP_ERR_INVALID_ARG, "too little data");
    CHECK(k == 0, "no folds on error");
    c.step = 100;
    CHECK_STATUS(vp_walkforward_make(5000, &c, f, 16, &k), VP_ERR_INVALID_ARG, "would overlap");
    c.step = 200;
    c.val_len = 0;
    CHECK_STATUS(vp_walkforward_make(5000, &c, f, 16, &k), VP_ERR_INVALID_ARG, "zero length");
}

/* Huge embargoes, lengths and steps (config values, or a caller's) are refused as too little
 * data with the real numbers, never wrapped into a span. */
static void test_overflow(void) {
    vp_split_cfg c = {0};
    c.train_frac = 0.7;
    c.val_frac = 0.15;
    c.test_frac = 0.15;
    c.warmup = 100;
    vp_split s;
    const int64_t big[] = {INT64_MAX, INT64_MAX / 2 + 1, INT64_MAX / 2, INT64_MAX - 100};
    for (int i = 0; i < 4; ++i) {
        c.embargo = big[i];
        char needle[200];
        snprintf(needle, sizeof needle, "too little data: 1000 bars leave none after warm-up 100 and embargo 2 x %lld",
                 (long long)big[i]);
        CHECK_STATUS(vp_split_make(1000, &c, &s), VP_ERR_INVALID_ARG, needle);
    }
    c.embargo = 0;
    c.warmup = INT64_MAX;
    CHECK_STATUS(vp_split_make(1000, &c, &s), VP_ERR_INVALID_ARG, "leave none after warm-up 9223372036854775807");
    /* By lengths: the need is said as more than the largest count. */
    c.warmup = 100;
    c.train_len = INT64_MAX;
    c.val_len = 10;
    c.test_len = 10;
    CHECK_STATUS(vp_split_make(1000, &c, &s), VP_ERR_INVALID_ARG,
                 "too little data: 1000 bars, the split needs more than 9223372036854775807");
    c.train_len = 10;
    c.embargo = INT64_MAX / 2;
    CHECK_STATUS(vp_split_make(1000, &c, &s), VP_ERR_INVALID_ARG, "the split needs more than 9223372036854775807");
    /* Walk-forward: a huge embargo, lengths or step. */
    vp_walkforward_cfg w = {1000, 200, 200, 200, 10, 383, 0};
    vp_split f[4];
    int64_t k = -1;
    w.embargo = INT64_MAX;
    CHECK_STATUS(vp_walkforward_make(5000, &w, f, 4, &k), VP_ERR_INVALID_ARG,
                 "too little data: 5000 bars, one fold needs more than 9223372036854775807");
    w.embargo = 10;
    w.train_len = INT64_MAX - 10;
    CHECK_STATUS(vp_walkforward_make(5000, &w, f, 4, &k), VP_ERR_INVALID_ARG, "one fold needs more than");
    w.train_len = 1000;
    for (int anchored = 0; anchored < 2; ++anchored) {
        w.anchored = anchored;
        w.step = INT64_MAX;
        CHECK_OK(vp_walkforward_make(5000, &w, f, 4, &k));
        CHECK(k == 1 && f[0].test.end == 383 + 1400 + 20, "one fold with a huge step: %lld", (long long)k);
        w.step = INT64_MAX / 3;
        CHECK_OK(vp_walkforward_make(INT64_MAX, &w, f, 4, &k));
        CHECK(k == 3, "folds of a huge step over the largest count: %lld", (long long)k);
        CHECK_OK(vp_split_check(&f[2], INT64_MAX, 383));
    }
    /* A span far below zero has no warm-up before it. */
    vp_span out;
    CHECK_STATUS(vp_span_with_warmup((vp_span){INT64_MIN + 5, 0}, 10, &out), VP_ERR_INVALID_ARG, "bars before it");
}

int main(void) {
    RUN_TEST(test_fractions);
    RUN_TEST(test_lengths);
    RUN_TEST(test_check);
    RUN_TEST(test_walkforward);
    RUN_TEST(test_overflow);
    return vpt_finish();
}
