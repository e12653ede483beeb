/* Offline datasets in host memory: allocation and the check of every field (vulpes/offline.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/action.h"
#include "vulpes/offline.h"

/* Most elements of one array (keeps every byte count far from overflow). */
#define VP_OFFLINE_MAX_ELEMS ((int64_t)1 << 40)

/* Widest portfolio vector accepted. */
#define VP_OFFLINE_MAX_P 4096

/* Checks T, E, P and that the largest array, [T + 1, E, P], stays under the element limit. */
static vp_status check_sizes(const char* where, int64_t T, int64_t E, int P) {
    VP_REQUIRE(T >= 1 && E >= 1 && P >= 1 && P <= VP_OFFLINE_MAX_P, VP_ERR_INVALID_ARG,
               "%s: steps %lld, envs %lld and portfolio width %d must be >= 1 (portfolio at most %d)", where,
               (long long)T, (long long)E, P, VP_OFFLINE_MAX_P);
    VP_REQUIRE(T < VP_OFFLINE_MAX_ELEMS && E <= VP_OFFLINE_MAX_ELEMS / (T + 1) &&
                   (T + 1) * E <= VP_OFFLINE_MAX_ELEMS / (P > VP_ENV_BRANCHES ? P : VP_ENV_BRANCHES),
               VP_ERR_INVALID_ARG, "%s: %lld steps x %lld envs x %d is more than %lld elements", where, (long long)T,
               (long long)E, P > VP_ENV_BRANCHES ? P : VP_ENV_BRANCHES, (long long)VP_OFFLINE_MAX_ELEMS);
    return VP_OK;
}

vp_status vp_offline_alloc(vp_offline_data* d, int64_t T, int64_t E, int P) {
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "vp_offline_alloc: d is NULL");
    memset(d, 0, sizeof *d);
    VP_TRY(check_sizes("vp_offline_alloc", T, E, P));
    const size_t obs = (size_t)((T + 1) * E), rows = (size_t)(T * E);
    d->steps = T;
    d->n_envs = E;
    d->n_portfolio = P;
    d->bar = (int32_t*)calloc(obs, sizeof *d->bar);
    d->portfolio = (float*)calloc(obs * (size_t)P, sizeof *d->portfolio);
    d->action = (int32_t*)calloc(rows * VP_ENV_BRANCHES, sizeof *d->action);
    d->reward = (float*)calloc(rows, sizeof *d->reward);
    d->done = (float*)calloc(rows, sizeof *d->done);
    d->logp = (float*)malloc(rows * sizeof *d->logp);
    if (!d->bar || !d->portfolio || !d->action || !d->reward || !d->done || !d->logp) {
        vp_offline_free(d);
        VP_FAIL(VP_ERR_OOM, "vp_offline_alloc: out of host memory for %lld steps x %lld envs", (long long)T,
                (long long)E);
    }
    for (size_t i = 0; i < rows; ++i) d->logp[i] = NAN;
    return VP_OK;
}

void vp_offline_free(vp_offline_data* d) {
    if (!d) return;
    free(d->bar);
    free(d->portfolio);
    free(d->action);
    free(d->reward);
    free(d->done);
    free(d->logp);
    memset(d, 0, sizeof *d);
}

/* Checks the per-row arrays: bars inside the span and one bar on after a step that did not end
 * its episode, actions inside their branches, done 0 or 1, finite rewards and portfolios, logp
 * NaN or finite and <= 0. */
static vp_status check_rows(const vp_offline_data* d, const char* where) {
    const int64_t T = d->steps, E = d->n_envs, P = d->n_portfolio;
    const vp_action_layout l = vp_action_layout_env();
    for (int64_t r = 0; r < (T + 1) * E; ++r) {
        const int64_t b = d->bar[r];
        VP_REQUIRE(b >= d->span.begin && b < d->span.end, VP_ERR_PARSE,
                   "%s: bar of row %lld, env %lld is %lld, outside the span [%lld, %lld)", where, (long long)(r / E),
                   (long long)(r % E), (long long)b, (long long)d->span.begin, (long long)d->span.end);
        for (int64_t j = 0; j < P; ++j)
            VP_REQUIRE(isfinite(d->portfolio[r * P + j]), VP_ERR_PARSE,
                       "%s: portfolio of row %lld, env %lld, column %lld is not finite", where, (long long)(r / E),
                       (long long)(r % E), (long long)j);
    }
    for (int64_t r = 0; r < T * E; ++r) {
        const long long t = (long long)(r / E), i = (long long)(r % E);
        for (int br = 0; br < VP_ENV_BRANCHES; ++br) {
            const int32_t a = d->action[r * VP_ENV_BRANCHES + br];
            VP_REQUIRE(a >= 0 && a < l.size[br], VP_ERR_PARSE,
                       "%s: action of row %lld, env %lld, branch %d is %d, outside 0..%d", where, t, i, br, (int)a,
                       l.size[br] - 1);
        }
        const float done = d->done[r], rew = d->reward[r], lp = d->logp[r];
        VP_REQUIRE(done == 0.0f || done == 1.0f, VP_ERR_PARSE, "%s: done of row %lld, env %lld is %g, not 0 or 1",
                   where, t, i, (double)done);
        VP_REQUIRE(isfinite(rew), VP_ERR_PARSE, "%s: reward of row %lld, env %lld is not finite", where, t, i);
        VP_REQUIRE(isnan(lp) || (isfinite(lp) && lp <= 0.0f), VP_ERR_PARSE,
                   "%s: logp of row %lld, env %lld is %g (a log-probability is <= 0, or NaN when unknown)", where, t,
                   i, (double)lp);
        VP_REQUIRE(done == 1.0f || d->bar[r + E] == d->bar[r] + 1, VP_ERR_PARSE,
                   "%s: bar of row %lld, env %lld is %d after bar %d in an episode that went on (one bar per step)",
                   where, t + 1, i, (int)d->bar[r + E], (int)d->bar[r]);
    }
    return VP_OK;
}

vp_status vp_offline_check(const vp_offline_data* d, const char* where) {
    where = where ? where : "offline dataset";
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "%s: the dataset is NULL", where);
    VP_TRY(check_sizes(where, d->steps, d->n_envs, d->n_portfolio));
    VP_REQUIRE(d->bar && d->portfolio && d->action && d->reward && d->done && d->logp, VP_ERR_INVALID_ARG,
               "%s: an array of the dataset is NULL", where);
    VP_REQUIRE(memchr(d->behaviour, '\0', sizeof d->behaviour) != NULL && d->behaviour[0] != '\0', VP_ERR_PARSE,
               "%s: behaviour is empty or longer than %d bytes", where, VP_OFFLINE_BEHAVIOUR_MAX - 1);
    VP_TRY(vp_data_record_check(&d->data, where));
    VP_REQUIRE(d->span.begin >= 0 && d->span.begin < d->span.end && d->span.end <= d->data.n_bars, VP_ERR_PARSE,
               "%s: span [%lld, %lld) is not a non-empty span of the data's %lld bars", where,
               (long long)d->span.begin, (long long)d->span.end, (long long)d->data.n_bars);
    return check_rows(d, where);
}

vp_status vp_offline_check_data(const vp_offline_data* d, const vp_train_data* t, const char* where) {
    where = where ? where : "offline dataset";
    VP_REQUIRE(d != NULL && t != NULL, VP_ERR_INVALID_ARG, "%s: dataset or data is NULL", where);
    vp_data_record have;
    VP_TRY(vp_data_record_identify(t->source, t->source_bytes, t->source_hash, &have));
    char a[1200], b[1200];
    VP_REQUIRE(vp_data_record_same(&d->data, &have) && d->data.n_bars == t->bars.n, VP_ERR_INVALID_ARG,
               "%s: recorded on %s (%lld bars), not on these bars, %s (%lld bars)", where,
               vp_data_record_describe(&d->data, a, sizeof a), (long long)d->data.n_bars,
               vp_data_record_describe(&have, b, sizeof b), (long long)t->bars.n);
    VP_REQUIRE(d->span.begin >= 0 && d->span.begin < d->span.end && d->span.end <= t->bars.n, VP_ERR_INVALID_ARG,
               "%s: span [%lld, %lld) is not inside the %lld bars of %s", where, (long long)d->span.begin,
               (long long)d->span.end, (long long)t->bars.n, b);
    return VP_OK;
}
