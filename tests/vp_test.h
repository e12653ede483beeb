/* A minimal test harness: checks that count failures, print what failed and where, and
 * a closing line "N passed, N failed". A test program exits non-zero on any failure. The
 * helpers every test shares come with it (test_util.h). */
#ifndef VP_TEST_H
#define VP_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/vulpes.h"

static int vpt_checks_failed = 0;
static int vpt_tests_passed = 0;
static int vpt_tests_failed = 0;

/* Fails the current test (and goes on) when `cond` is false. */
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            vpt_checks_failed++;                                                  \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
        }                                                                         \
    } while (0)

/* Fails when |a - b| > atol + rtol * |b|, or either is NaN. */
#define CHECK_NEAR(a, b, atol, rtol)                                                          \
    do {                                                                                      \
        double vpt_a_ = (double)(a), vpt_b_ = (double)(b);                                    \
        CHECK(!isnan(vpt_a_) && !isnan(vpt_b_) &&                                             \
                  fabs(vpt_a_ - vpt_b_) <= (atol) + (rtol) * fabs(vpt_b_),                    \
              "%s = %.10g, expected %s = %.10g (atol %g, rtol %g)", #a, vpt_a_, #b, vpt_b_,   \
              (double)(atol), (double)(rtol));                                                \
    } while (0)

/* Fails when a vulpes call does not return VP_OK, printing its message. */
#define CHECK_OK(expr)                                                                         \
    do {                                                                                       \
        vp_status vpt_s_ = (expr);                                                             \
        CHECK(vpt_s_ == VP_OK, "%s -> %s: %s", #expr, vp_status_name(vpt_s_), vp_last_error()); \
    } while (0)

/* Fails unless a vulpes call returns exactly `status` with a message containing `needle`. */
#define CHECK_STATUS(expr, status, needle)                                                   \
    do {                                                                                     \
        vp_clear_error();                                                                    \
        vp_status vpt_s_ = (expr);                                                           \
        CHECK(vpt_s_ == (status) && strstr(vp_last_error(), (needle)) != NULL,               \
              "%s -> %s \"%s\", expected %s mentioning \"%s\"", #expr, vp_status_name(vpt_s_), \
              vp_last_error(), vp_status_name(status), (needle));                            \
    } while (0)

/* Runs one test function and records whether its checks passed. */
#define RUN_TEST(fn)                                                     \
    do {                                                                 \
        int vpt_before_ = vpt_checks_failed;                             \
        fn();                                                            \
        if (vpt_checks_failed == vpt_before_) {                          \
            vpt_tests_passed++;                                          \
            fprintf(stderr, "ok   %s\n", #fn);                           \
        } else {                                                         \
            vpt_tests_failed++;                                          \
            fprintf(stderr, "FAIL %s\n", #fn);                           \
        }                                                                \
    } while (0)

/* Prints the closing line and returns the process exit code. */
static inline int vpt_finish(void) {
    printf("%d passed, %d failed\n", vpt_tests_passed, vpt_tests_failed);
    return vpt_tests_failed == 0 && vpt_tests_passed > 0 ? 0 : 1;
}

#include "test_util.h"

#endif /* VP_TEST_H */
