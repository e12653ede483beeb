/* The segment-parallel mode against the exact sequential one: the windows' arithmetic, and
 * every window of a segment run equal — points, choices, trades — to the sequential
 * backtest of that window alone, with forced random actions and with a network's greedy
 * choices. */
#include "test_backtest_util.h"
#include "vp_test.h"
#include "vulpes/rng.h"

enum { NBARS = 700, A0 = 333, B0 = 700 };

/* Random forced choices for the decisions of span [a, b), Philox by bar. */
static int32_t* random_actions(int64_t a, int64_t b, uint64_t seed) {
    int32_t* x = (int32_t*)malloc(sizeof(int32_t) * 4 * (size_t)(b - a - 1));
    for (int64_t k = 0; x && k < b - a - 1; ++k) {
        vp_u32x4 r = vp_rng_draw(seed, 7, (uint64_t)(a + k));
        // mostly holding (every fifth bar a new choice), so trades last a few bars
        const int64_t anchor = (a + k) / 5 * 5;
        vp_u32x4 h = vp_rng_draw(seed, 8, (uint64_t)anchor);
        x[k * 4 + 0] = (int32_t)(((uint64_t)h.v[0] * 3) >> 32);
        x[k * 4 + 1] = (int32_t)(((uint64_t)h.v[1] * 4) >> 32);
        x[k * 4 + 2] = (int32_t)(((uint64_t)r.v[2] * 3) >> 32);
        x[k * 4 + 3] = (int32_t)(((uint64_t)r.v[3] * 3) >> 32);
    }
    return x;
}

/* Checks that window w of `seg` equals the sequential result `one` of that window alone. */
static void check_window(const vp_rollout_result* seg, int64_t w, const vp_rollout_result* one) {
    const vp_rollout_window* x = &seg->windows[w];
    CHECK(one->n_points == x->n_points, "window %lld: %lld points alone, %lld in the segment run", (long long)w,
          (long long)one->n_points, (long long)x->n_points);
    if (one->n_points != x->n_points) return;
    int same = 1;
    for (int64_t k = 0; k < x->n_points; ++k) {
        const int64_t o = x->offset + k;
        same &= one->equity[k] == seg->equity[o] && one->cash[k] == seg->cash[o] &&
                one->position[k] == seg->position[o] && one->bar[k] == seg->bar[o];
        for (int j = 0; j < 4; ++j) same &= one->action[k * 4 + j] == seg->action[o * 4 + j];
        same &= isnan(one->margin[k]) ? isnan(seg->margin[o]) : one->margin[k] == seg->margin[o];
    }
    CHECK(same, "window %lld: points differ from the sequential run", (long long)w);
    // the same ruins (alone, the window is window 0)
    vp_rollout_ruin ru = x->ruin, bh = x->buy_hold_ruin;
    ru.window = bh.window = 0;
    CHECK(vpt_ruin_equal(&one->windows[0].ruin, &ru) && vpt_ruin_equal(&one->windows[0].buy_hold_ruin, &bh),
          "window %lld: ruined %d alone, %d in the segment run", (long long)w, one->windows[0].ruin.ruined, x->ruin.ruined);
    // the window's trades, in order
    int64_t n = 0;
    for (int64_t i = 0; i < seg->n_trades; ++i) {
        const vp_rollout_trade* t = &seg->trades[i];
        if (t->window != w) continue;
        vp_rollout_trade u = *t;
        u.window = 0;
        CHECK(n < one->n_trades && memcmp(&u, &one->trades[n], sizeof u) == 0, "window %lld trade %lld differs",
              (long long)w, (long long)n);
        ++n;
    }
    CHECK(n == one->n_trades, "window %lld: %lld trades in the segment run, %lld alone", (long long)w, (long long)n,
          (long long)one->n_trades);
    CHECK(x->perf.total_return == one->summary.strategy.total_return &&
              x->buy_hold.total_return == one->summary.buy_hold.total_return,
          "window %lld total return", (long long)w);
}

/* Runs the span in n windows, then each window alone, and compares; windows may end early
 * by the ruin rule (c.ruin_fraction) and their count goes into *ruined (may be NULL). */
static void compare_modes_ruin(vp_backend* b, const vp_model* m, const vpt_market* mk, vp_rollout_cfg c, int64_t n_win,
                               int64_t* trades, int64_t* ruined) {
    vp_rollout_data d = {&mk->bars, mk->atr, &mk->features, {A0, B0}};
    vp_rollout_result seg;
    c.n_windows = n_win;
    CHECK_OK(vp_backtest_run(b, m, m ? &m->params : NULL, &d, &c, &seg));
    // the windows tile the span's steps: consecutive, sharing their boundary bars
    const int64_t steps = B0 - A0 - 1;
    CHECK(seg.n_windows == n_win && seg.windows[0].begin == A0 && (ruined || seg.windows[n_win - 1].last == B0 - 1),
          "window ends %lld .. %lld", (long long)seg.windows[0].begin, (long long)seg.windows[n_win - 1].last);
    for (int64_t w = 0; w < n_win; ++w) {
        const vp_rollout_window* x = &seg.windows[w];
        const int64_t end = A0 + (w + 1) * steps / n_win;
        CHECK(x->begin == A0 + w * steps / n_win && (ruined ? x->last <= end : x->last == end && !x->ruined),
              "window %lld is bars %lld .. %lld", (long long)w, (long long)x->begin, (long long)x->last);
    }
    CHECK((ruined || seg.n_points == steps + n_win) && seg.n_curve == B0 - A0, "%lld points, curve %lld",
          (long long)seg.n_points, (long long)seg.n_curve);
    if (ruined) *ruined = seg.n_ruined;
    // each window alone, through the sequential path (forced actions indexed from its first bar)
    c.n_windows = 1;
    for (int64_t w = 0; w < n_win; ++w) {
        const vp_rollout_window* x = &seg.windows[w];
        vp_rollout_data dw = d;
        vp_rollout_cfg cw = c;
        if (c.forced_actions) cw.forced_actions = c.forced_actions + (x->begin - A0) * 4;
        dw.span = (vp_span){x->begin, A0 + (w + 1) * steps / n_win + 1}; /* its planned bars, even when it ruined */
        vp_rollout_result one;
        CHECK_OK(vp_backtest_run(b, m, m ? &m->params : NULL, &dw, &cw, &one));
        check_window(&seg, w, &one);
        vp_rollout_result_free(&one);
    }
    // the stitched curve: each window continues from the previous one's ending equity
    for (int64_t w = 1; w < n_win; ++w) {
        const vp_rollout_window* x = &seg.windows[w];
        const double ratio = seg.equity[x->offset + x->n_points - 1] / seg.equity[x->offset];
        const double got = seg.curve_equity[x->last - A0] / seg.curve_equity[x->begin - A0];
        CHECK_NEAR(got, ratio, 0, 1e-12);
    }
    *trades = seg.n_trades;
    vp_rollout_result_free(&seg);
}

/* compare_modes_ruin where no window may ruin. */
static void compare_modes(vp_backend* b, const vp_model* m, const vpt_market* mk, vp_rollout_cfg c, int64_t n_win,
                          int64_t* trades) {
    compare_modes_ruin(b, m, mk, c, n_win, trades, NULL);
}

static void test_forced(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 11), "market");
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument();
    c.episode_bars = 64;
    int32_t* acts = random_actions(A0, B0, 5);
    c.forced_actions = acts;
    int64_t trades = 0;
    compare_modes(b, NULL, &mk, c, 7, &trades);
    CHECK(trades > 30, "only %lld trades", (long long)trades);
    compare_modes(b, NULL, &mk, c, 366, &trades);  // every window a single step: nothing can trade
    CHECK(trades == 0, "%lld trades in one-step windows", (long long)trades);
    // a ruin level just under the initial equity: windows close out early, each as it does alone
    c.ruin_fraction = 0.9995;
    int64_t ruined = 0;
    compare_modes_ruin(b, NULL, &mk, c, 7, &trades, &ruined);
    CHECK(ruined >= 3, "only %lld of 7 windows ruined", (long long)ruined);
    free(acts);
    vp_backend_free(b);
    vpt_market_free(&mk);
}

static void test_model(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 12), "market");
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model m;
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    CHECK_OK(vp_model_init(&m, b, &mc, 3));
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument();
    c.episode_bars = 48;
    c.encode_chunk = 37;  // odd chunks: the encoding must not depend on them
    int64_t trades = 0;
    // any window count: each window equals its rollout alone, bit for bit on the CPU
    static const int64_t counts[] = {2, 3, 5, 17};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
        compare_modes(b, &m, &mk, c, counts[i], &trades);
        CHECK(trades > 0, "%lld windows: the network never traded", (long long)counts[i]);
    }
    // with windows ruined and closed out early (and no decision after them), and others not
    c.ruin_fraction = 0.9995;
    int64_t ruined = 0;
    compare_modes_ruin(b, &m, &mk, c, 5, &trades, &ruined);
    CHECK(ruined >= 1 && ruined < 5, "%lld of 5 windows ruined", (long long)ruined);
    vp_model_free(&m);
    vp_backend_free(b);
    vpt_market_free(&mk);
}

int main(void) {
    RUN_TEST(test_forced);
    RUN_TEST(test_model);
    return vpt_finish();
}
