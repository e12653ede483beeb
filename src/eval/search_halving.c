/* Successive halving: the iterations of each rung and the trials a rung promotes, as pure
 * functions of their inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/search.h"

vp_status vp_search_budgets(int64_t iterations, int64_t eta, int64_t min_iterations, int64_t n_trials,
                            int64_t* budgets, int* n_rungs) {
    VP_REQUIRE(budgets && n_rungs, VP_ERR_INVALID_ARG, "vp_search_budgets: NULL argument");
    VP_REQUIRE(iterations >= 1, VP_ERR_INVALID_ARG, "a search needs train.iterations >= 1, got %lld",
               (long long)iterations);
    VP_REQUIRE(eta >= 2, VP_ERR_INVALID_ARG, "the halving factor eta must be >= 2, got %lld", (long long)eta);
    VP_REQUIRE(n_trials >= 1, VP_ERR_INVALID_ARG, "a search needs at least 1 trial, got %lld", (long long)n_trials);
    VP_REQUIRE(min_iterations >= 0 && min_iterations <= iterations, VP_ERR_INVALID_ARG,
               "the first rung's iterations (--min-iterations) must be 1 .. train.iterations (%lld), got %lld",
               (long long)iterations, (long long)min_iterations);
    int64_t r = min_iterations;
    if (r == 0) {
        // k rungs, k - 1 the times n_trials can be divided by eta and leave at least one trial
        int64_t div = 1;
        for (int64_t m = n_trials; m >= eta && div <= iterations; m /= eta) div *= eta;
        r = (iterations + div - 1) / div; // R eta^(k-1) reaches train.iterations: k rungs, no stub rung
    }
    int n = 0;
    for (int64_t b = r; b < iterations; b = b > INT64_MAX / eta ? iterations : b * eta) {
        VP_REQUIRE(n < VP_SEARCH_MAX_RUNGS - 1, VP_ERR_INVALID_ARG,
                   "the halving would need more than %d rungs (first rung %lld iterations, eta %lld, train.iterations "
                   "%lld): raise --min-iterations or eta", VP_SEARCH_MAX_RUNGS, (long long)r, (long long)eta,
                   (long long)iterations);
        budgets[n++] = b;
    }
    budgets[n++] = iterations;
    *n_rungs = n;
    return VP_OK;
}

int64_t vp_search_promote_count(int64_t n, int64_t eta) {
    if (n <= 0 || eta < 1) return 0;
    return (n + eta - 1) / eta;
}

/* A trial and its score while ranking. */
typedef struct ranked {
    int64_t trial;
    double score;
} ranked;

/* Higher score first, a NaN after every number, then the lower trial index. */
static int by_score(const void* a, const void* b) {
    const ranked* x = (const ranked*)a;
    const ranked* y = (const ranked*)b;
    const int xn = isnan(x->score), yn = isnan(y->score);
    if (xn != yn) return xn - yn;
    if (!xn && x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->trial > y->trial) - (x->trial < y->trial);
}

static int by_trial(const void* a, const void* b) {
    const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return (x > y) - (x < y);
}

int64_t vp_search_promote(const int64_t* trials, const double* scores, int64_t n, int64_t eta, int64_t* out) {
    const int64_t k = vp_search_promote_count(n, eta);
    if (k == 0 || !trials || !scores || !out) return 0;
    ranked* r = (ranked*)malloc((size_t)n * sizeof *r);
    if (!r) return -1;
    for (int64_t i = 0; i < n; ++i) r[i].trial = trials[i], r[i].score = scores[i];
    qsort(r, (size_t)n, sizeof *r, by_score);
    for (int64_t i = 0; i < k; ++i) out[i] = r[i].trial;
    free(r);
    qsort(out, (size_t)k, sizeof *out, by_trial);
    return k;
}
