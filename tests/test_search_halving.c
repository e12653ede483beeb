/* Successive halving of vulpes search: the rungs' iterations (the default first rung and a
 * given one, each by hand), the count a rung promotes (ceil(n / eta)), the promoted trials of
 * hand-made scores (highest first, a NaN below every number, a tie to the lower trial index,
 * out in trial order), and the refusals. */
#include "vp_test.h"
#include "vulpes/search.h"

/* The budgets of (iterations, eta, R, N) equal want[n]. */
static void check_budgets(int64_t iterations, int64_t eta, int64_t r, int64_t n_trials, const int64_t* want, int n) {
    int64_t b[VP_SEARCH_MAX_RUNGS];
    int got = -1;
    CHECK_OK(vp_search_budgets(iterations, eta, r, n_trials, b, &got));
    CHECK(got == n, "budgets(%lld, %lld, %lld, %lld): %d rungs, expected %d", (long long)iterations, (long long)eta,
          (long long)r, (long long)n_trials, got, n);
    for (int i = 0; i < n && i < got; ++i)
        CHECK(b[i] == want[i], "budgets(%lld, %lld, %lld, %lld)[%d] = %lld, expected %lld", (long long)iterations,
              (long long)eta, (long long)r, (long long)n_trials, i, (long long)b[i], (long long)want[i]);
}

static void test_budgets(void) {
    // default R: k = 1 + floor(log_eta N) rungs, R = ceil(I / eta^(k-1))
    const int64_t a[] = {10, 20, 40};            // N 4, eta 2: k 3, R 40 / 4
    check_budgets(40, 2, 0, 4, a, 3);
    const int64_t b[] = {12, 36, 100};           // N 16, eta 3: k 3 (16 -> 5 -> 1), R ceil(100 / 9) = 12
    check_budgets(100, 3, 0, 16, b, 3);
    const int64_t c[] = {3, 9, 27, 81};          // N 27, eta 3: k 4, R 81 / 27
    check_budgets(81, 3, 0, 27, c, 4);
    const int64_t d[] = {1, 2};                  // N 16, eta 3 but 2 iterations: R 1, then the end
    check_budgets(2, 3, 0, 16, d, 2);
    const int64_t e[] = {50};                    // N 2 < eta 3: one rung of every iteration
    check_budgets(50, 3, 0, 2, e, 1);
    // a given R: R eta^r while below I, then I
    const int64_t f[] = {11, 33, 99, 100};
    check_budgets(100, 3, 11, 16, f, 4);
    const int64_t g[] = {100};
    check_budgets(100, 3, 100, 16, g, 1);
    const int64_t h[] = {5, 10, 20, 40, 50};
    check_budgets(50, 2, 5, 4, h, 5);
}

static void test_budgets_refused(void) {
    int64_t b[VP_SEARCH_MAX_RUNGS];
    int n = 0;
    CHECK_STATUS(vp_search_budgets(40, 1, 0, 4, b, &n), VP_ERR_INVALID_ARG, "eta must be >= 2, got 1");
    CHECK_STATUS(vp_search_budgets(40, 2, 41, 4, b, &n), VP_ERR_INVALID_ARG,
                 "must be 1 .. train.iterations (40), got 41");
    CHECK_STATUS(vp_search_budgets(40, 2, 0, 0, b, &n), VP_ERR_INVALID_ARG, "at least 1 trial, got 0");
    CHECK_STATUS(vp_search_budgets((int64_t)1 << 40, 2, 1, 4, b, &n), VP_ERR_INVALID_ARG,
                 "would need more than 32 rungs");
}

static void test_promote_count(void) {
    // ceil(n / eta)
    const int64_t n[] = {16, 6, 2, 1, 0, 10, 9, 27, 28};
    const int64_t eta[] = {3, 3, 3, 3, 3, 2, 2, 3, 3};
    const int64_t want[] = {6, 2, 1, 1, 0, 5, 5, 9, 10};
    for (int i = 0; i < 9; ++i)
        CHECK(vp_search_promote_count(n[i], eta[i]) == want[i], "promote_count(%lld, %lld) = %lld, expected %lld",
              (long long)n[i], (long long)eta[i], (long long)vp_search_promote_count(n[i], eta[i]), (long long)want[i]);
}

/* vp_search_promote of trials t[n], scores s[n] with eta gives want[k]. */
static void check_promote(const int64_t* t, const double* s, int64_t n, int64_t eta, const int64_t* want, int64_t k) {
    int64_t out[16];
    const int64_t got = vp_search_promote(t, s, n, eta, out);
    CHECK(got == k, "promote of %lld trials, eta %lld: %lld promoted, expected %lld", (long long)n, (long long)eta,
          (long long)got, (long long)k);
    for (int64_t i = 0; i < k && i < got; ++i)
        CHECK(out[i] == want[i], "promoted[%lld] = %lld, expected %lld", (long long)i, (long long)out[i],
              (long long)want[i]);
}

static void test_promote(void) {
    const int64_t t6[] = {0, 1, 2, 3, 4, 5};
    const double s6[] = {0.5, 2.0, NAN, 2.0, -1.0, 1.0};
    // eta 3: ceil(6/3) = 2, the two 2.0s (trials 1 and 3)
    const int64_t w3[] = {1, 3};
    check_promote(t6, s6, 6, 3, w3, 2);
    // eta 2: 3, then 1.0 (trial 5)
    const int64_t w2[] = {1, 3, 5};
    check_promote(t6, s6, 6, 2, w2, 3);
    // eta 6: 1, the tie of 2.0 to the lower index
    const int64_t w6[] = {1};
    check_promote(t6, s6, 6, 6, w6, 1);
    // all equal: the lowest indices
    const int64_t t4[] = {0, 1, 2, 3};
    const double e4[] = {1.0, 1.0, 1.0, 1.0};
    const int64_t we[] = {0, 1};
    check_promote(t4, e4, 4, 2, we, 2);
    // NaN below every number, even a very negative one; NaNs among themselves by index
    const double n3[] = {NAN, NAN, -1e300};
    const int64_t wn[] = {2};
    check_promote(t4, n3, 3, 3, wn, 1);
    const double nn[] = {NAN, NAN, NAN, NAN};
    const int64_t wnn[] = {0, 1};
    check_promote(t4, nn, 4, 2, wnn, 2);
    // trials of a later rung: indices not contiguous, the output in trial order
    const int64_t tl[] = {7, 2, 9};
    const double sl[] = {1.0, 3.0, 2.0};
    const int64_t wl[] = {2, 9};
    check_promote(tl, sl, 3, 2, wl, 2);
    // one trial goes on alone
    const int64_t t1[] = {5};
    const double s1[] = {NAN};
    check_promote(t1, s1, 1, 3, t1, 1);
}

int main(void) {
    RUN_TEST(test_budgets);
    RUN_TEST(test_budgets_refused);
    RUN_TEST(test_promote_count);
    RUN_TEST(test_promote);
    return vpt_finish();
}
