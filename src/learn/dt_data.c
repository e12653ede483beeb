/* The Decision Transformer's training rows: a recorded dataset (vulpes/offline.h) split into
 * episodes, each step's undiscounted return-to-go and index in its episode computed once on the
 * host, then uploaded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/dt.h"
#include "vulpes/ops.h"

/* The host arrays of the rows. */
typedef struct host_rows {
    float* rtg;   /* [R] */
    int32_t* ts;  /* [R] */
} host_rows;

/* Each env column's episodes: the index of every step in its episode, the returns-to-go from
 * the end of each episode backwards, and the returns of the episodes (complete ones, and all). */
static void episodes(const vp_offline_data* d, host_rows* h, vp_dt_data* out) {
    const int64_t T = d->steps, E = d->n_envs;
    double best_c = -INFINITY, best_a = -INFINITY, sum_c = 0.0, sum_a = 0.0;
    int64_t n_c = 0, n_a = 0;
    for (int64_t e = 0; e < E; ++e) {
        int64_t t0 = 0;
        for (int64_t t = 0; t < T; ++t) {
            h->ts[t * E + e] = (int32_t)(t - t0 < INT32_MAX ? t - t0 : INT32_MAX);
            const int ends = d->done[t * E + e] > 0.5f;
            if (!ends && t + 1 < T) continue;
            // the episode t0 .. t: returns-to-go backwards, in double
            double g = 0.0;
            for (int64_t u = t; u >= t0; --u) {
                g += (double)d->reward[u * E + e];
                h->rtg[u * E + e] = (float)g;
            }
            if (ends) {
                best_c = g > best_c ? g : best_c;
                sum_c += g;
                ++n_c;
            }
            best_a = g > best_a ? g : best_a;
            sum_a += g;
            ++n_a;
            t0 = t + 1;
        }
    }
    out->n_episodes = n_a;
    out->best_return = n_c > 0 ? best_c : best_a;
    out->mean_return = n_c > 0 ? sum_c / (double)n_c : sum_a / (double)n_a;
}

vp_status vp_dt_data_init(vp_dt_data* out, vp_backend* b, const vp_offline_data* d, int n_portfolio) {
    VP_REQUIRE(out != NULL && b != NULL && d != NULL, VP_ERR_INVALID_ARG, "vp_dt_data_init: NULL argument");
    memset(out, 0, sizeof *out);
    VP_REQUIRE(d->n_portfolio == n_portfolio, VP_ERR_SHAPE,
               "dt.dataset: portfolio vectors of %d columns, the network reads %d (model.n_portfolio)", d->n_portfolio,
               n_portfolio);
    VP_REQUIRE(d->steps >= 1 && d->n_envs >= 1 && d->steps <= INT32_MAX / d->n_envs, VP_ERR_SHAPE,
               "dt.dataset: %lld steps x %lld envs: 1 .. 2^31 - 1 rows", (long long)d->steps, (long long)d->n_envs);
    const int64_t R = d->steps * d->n_envs, P = n_portfolio;
    out->n_rows = R;
    out->n_envs = d->n_envs;
    host_rows h;
    h.rtg = (float*)malloc(sizeof(float) * (size_t)R);
    h.ts = (int32_t*)malloc(sizeof(int32_t) * (size_t)R);
    vp_status s = h.rtg && h.ts ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "dt.dataset: %lld rows", (long long)R);
    if (s == VP_OK) episodes(d, &h, out);
    const size_t words = (size_t)(R * (1 + P + 4 + 1 + 1));
    if (s == VP_OK) s = vp_arena_init(&out->arena, b, vp_backend_native_mem(b), words * 4 + 8 * 256);
    const int64_t s1[1] = {R}, sp[2] = {R, P}, sa[2] = {R, 4};
    if (s == VP_OK) s = vp_arena_tensor(&out->arena, "dt.rows.bar", VP_I32, 1, s1, &out->bar, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&out->arena, "dt.rows.port", VP_F32, 2, sp, &out->port, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&out->arena, "dt.rows.act", VP_I32, 2, sa, &out->act, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&out->arena, "dt.rows.rtg", VP_F32, 1, s1, &out->rtg, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&out->arena, "dt.rows.ts", VP_I32, 1, s1, &out->ts, NULL);
    // rows 0 .. T-1 of the dataset's observations (row T, the last next observation, is no step)
    if (s == VP_OK) s = vp_upload(b, &out->bar, d->bar, sizeof(int32_t) * (size_t)R);
    if (s == VP_OK) s = vp_upload(b, &out->port, d->portfolio, sizeof(float) * (size_t)(R * P));
    if (s == VP_OK) s = vp_upload(b, &out->act, d->action, sizeof(int32_t) * (size_t)(R * 4));
    if (s == VP_OK) s = vp_upload(b, &out->rtg, h.rtg, sizeof(float) * (size_t)R);
    if (s == VP_OK) s = vp_upload(b, &out->ts, h.ts, sizeof(int32_t) * (size_t)R);
    if (s == VP_OK) s = vp_backend_sync(b);
    free(h.rtg);
    free(h.ts);
    if (s != VP_OK) vp_dt_data_free(out);
    return s;
}

void vp_dt_data_free(vp_dt_data* d) {
    if (!d) return;
    if (d->arena.backend) vp_arena_free(&d->arena);
    memset(d, 0, sizeof *d);
}
