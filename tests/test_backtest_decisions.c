/* The backtest's decisions beyond the trades: the Q margin of every choice and the count of
 * fragile ones (margin < 1e-4), on the 9-bar path with a crafted policy whose scores tie or
 * nearly tie at chosen bars (margins by hand); and the decision at the span's last close for
 * the bar after it, on a tiny network, rebuilt from that bar's features and the documented
 * portfolio of the window at that close, written as equity.csv's last row, reading the last
 * bar's feature row and nothing after it. */
#include "test_backtest_hand.h" /* first: its system headers' POSIX level */
#include "test_backtest_util.h"

#include <cjson/cJSON.h>

#include "eval/eval_impl.h"

/* ---- a policy with crafted scores ---------------------------------------------------------- */

/* Its workspace: the encodings (the bar index itself) and the scores of a batch. */
typedef struct crafted_work {
    float* enc; /* [batch] */
    float* q;   /* [batch, 13] */
} crafted_work;

static int64_t g_max_bar = -1; /* the largest bar the policy was asked to encode */

/* The scores at bar t: direction {0, 1, 2}, size {0, 0, 0, 1}, take-profit and stop-loss
 * {1, 0, 0} (long 2 contracts, no levels; the margin 0.5 of the direction branch), except a
 * tie at bar 2, near ties at 3 (not fragile), 5, 6 (size branch), 7 (negative scores) and 8. */
static void crafted_q(int64_t t, float* q /* [13] */) {
    static const float base[13] = {0, 1, 2, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0};
    memcpy(q, base, sizeof base);
    if (t == 2) q[1] = 2.0f, q[2] = 2.0f;
    if (t == 3) q[1] = 2.0f, q[2] = 2.001f;
    if (t == 5 || t == 8) q[1] = 2.0f, q[2] = 2.0001f;
    if (t == 6) q[5] = 1.0f, q[6] = 1.00001f;
    if (t == 7) q[0] = -3.0f, q[1] = -1.0f, q[2] = -1.00005f;
}

static vp_status cw_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    (void)p;
    crafted_work* w = (crafted_work*)calloc(1, sizeof *w);
    if (w) w->enc = (float*)calloc((size_t)batch, sizeof(float)), w->q = (float*)calloc((size_t)batch * 13, sizeof(float));
    VP_REQUIRE(w && w->enc && w->q, VP_ERR_OOM, "crafted policy: workspace");
    *out = (vp_policy_work*)w;
    return VP_OK;
}

static void cw_free(vp_policy_work* pw) {
    crafted_work* w = (crafted_work*)pw;
    if (!w) return;
    free(w->enc);
    free(w->q);
    free(w);
}

static vp_status cw_encode(const vp_policy* p, vp_policy_work* pw, const vp_tensor* features, const vp_tensor* bar_idx,
                           int64_t n, vp_tensor* enc) {
    (void)p, (void)features;
    crafted_work* w = (crafted_work*)pw;
    const int32_t* idx = (const int32_t*)bar_idx->data;
    for (int64_t j = 0; j < n; ++j) {
        w->enc[j] = (float)idx[j];
        g_max_bar = idx[j] > g_max_bar ? idx[j] : g_max_bar;
    }
    *enc = vp_tensor_2d(w->enc, VP_F32, VP_MEM_HOST, n, 1);
    return VP_OK;
}

static vp_status cw_score(const vp_policy* p, vp_policy_work* pw, const vp_tensor* enc, const vp_tensor* portfolio,
                          int64_t n, vp_tensor* scores) {
    (void)p, (void)portfolio;
    crafted_work* w = (crafted_work*)pw;
    for (int64_t j = 0; j < n; ++j) crafted_q((int64_t)((const float*)enc->data)[j], w->q + 13 * j);
    *scores = vp_tensor_2d(w->q, VP_F32, VP_MEM_HOST, n, 13);
    return VP_OK;
}

static const vp_policy_ops CRAFTED = {"crafted", cw_init, cw_free, cw_encode, cw_score};

/* The margin of a branch whose best score is `best` and second `second` (floats), by hand. */
static double margin_of(float best, float second) {
    const double b = best, s = second, den = fabs(b) > fabs(s) ? fabs(b) : fabs(s);
    return (b - s) / den;
}

static void test_fragile_decisions(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    float zeros[NB] = {0};
    vp_tensor feat = vp_tensor_2d(zeros, VP_F32, VP_MEM_HOST, NB, 1);
    vp_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.ops = &CRAFTED, pol.backend = b, pol.n_features = 1, pol.window = 1, pol.n_portfolio = VP_ENV_PORTFOLIO;
    pol.enc_dim = 1, pol.layout = vp_action_layout_env();
    vp_rollout_cfg c = hand_cfg(NULL);
    vp_rollout_data d = {&f.bars, f.atr, &feat, {0, NB}};
    vp_rollout_result r;
    g_max_bar = -1;
    CHECK_OK(vp_rollout_run(b, &pol, &d, &c, &r));
    CHECK(g_max_bar == NB - 1, "the policy encoded bars up to %lld (the span's last is %d)", (long long)g_max_bar, NB - 1);

    // margins by hand; the tie goes to the lowest index (flat), the near ties to the larger score
    const double m_tie = 0.0, m_not = margin_of(2.001f, 2.0f), m_near = margin_of(2.0001f, 2.0f);
    const double m_size = margin_of(1.00001f, 1.0f), m_neg = margin_of(-1.0f, -1.00005f);
    const double want[NB] = {0.5, 0.5, m_tie, m_not, 0.5, m_near, m_size, m_neg, m_near};
    const int32_t dir[NB] = {2, 2, 1, 2, 2, 2, 2, 1, 2}, size[NB] = {3, 3, 3, 3, 3, 3, 3, 3, 3};
    CHECK(m_not > 1e-4 && m_near < 1e-4 && m_size < 1e-4 && m_neg < 1e-4, "hand margins %g %g %g %g", m_not, m_near,
          m_size, m_neg);
    CHECK(r.n_points == NB, "%lld points", (long long)r.n_points);
    for (int i = 0; i < NB && r.n_points == NB; ++i) {
        CHECK(r.margin[i] == want[i], "margin at bar %d: %.17g, by hand %.17g", i, r.margin[i], want[i]);
        CHECK(r.action[4 * i] == dir[i] && r.action[4 * i + 1] == size[i] && r.action[4 * i + 2] == 0 &&
                  r.action[4 * i + 3] == 0,
              "choice at bar %d: %d %d %d %d", i, r.action[4 * i], r.action[4 * i + 1], r.action[4 * i + 2],
              r.action[4 * i + 3]);
    }
    CHECK(r.n_decisions == NB && r.n_fragile == 5, "%lld fragile of %lld", (long long)r.n_fragile,
          (long long)r.n_decisions);

    // summary.json, the console and the report: the count, the threshold, the bars and times
    char dir_[256], path[400], line[1024];
    CHECK(tdu_mkdtemp(dir_, sizeof dir_) != NULL, "temporary folder");
    vp_backtest_info info = {"crafted", NULL, NULL, NULL, &f.bars, NULL, 0.25, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, dir_));
    char* text = vpt_read_file(dir_, "summary.json", NULL);
    cJSON* js = text ? cJSON_Parse(text) : NULL;
    const cJSON* fd = cJSON_GetObjectItemCaseSensitive(js, "fragile_decisions");
    const cJSON* bars = cJSON_GetObjectItemCaseSensitive(fd, "bars");
    const cJSON* times = cJSON_GetObjectItemCaseSensitive(fd, "times");
    const int want_bars[5] = {2, 5, 6, 7, 8};
    int same = cJSON_GetArraySize(bars) == 5 && cJSON_GetArraySize(times) == 5;
    for (int i = 0; same && i < 5; ++i) {
        char t[32];
        vp_time_format_iso(f.bars.time_ms[want_bars[i]], t, sizeof t);
        same = cJSON_GetArrayItem(bars, i)->valuedouble == want_bars[i] &&
               strcmp(cJSON_GetArrayItem(times, i)->valuestring, t) == 0;
    }
    CHECK(same && cJSON_GetObjectItemCaseSensitive(fd, "count")->valuedouble == 5 &&
              cJSON_GetObjectItemCaseSensitive(fd, "threshold")->valuedouble == 1e-4 &&
              cJSON_GetObjectItemCaseSensitive(fd, "n_decisions")->valuedouble == NB,
          "fragile_decisions: %s", text ? strstr(text, "\"fragile_decisions\"") : "");
    cJSON_Delete(js);
    free(text);
    const char* words = "fragile decisions: 5 of 9 choices won by a relative Q margin below 0.0001 (bars 2, 5, 6, 7, "
                        "8; the first at 2020-01-06T02:00:00Z): another backend, BLAS kernel or CPU type may choose "
                        "otherwise there";
    char* html = vpt_read_file(dir_, "report.html", NULL);
    CHECK(html && strstr(html, words) && strstr(html, words) < strstr(html, "<svg"), "report heading lacks: %s", words);
    free(html);
    FILE* out = tmpfile();
    if (out) {
        CHECK_OK(vp_backtest_print(&r, out));
        char con[16384] = {0};
        rewind(out);
        CHECK(fread(con, 1, sizeof con - 1, out) > 0 && strstr(con, words) && !strstr(con, "RUINED"),
              "console: %s", con);
        fclose(out);
    }
    // equity.csv: the tie's row, and the last row with the decision for the bar after the span
    char num[32];
    snprintf(path, sizeof path, "%s/equity.csv", dir_);
    CHECK(read_line(path, 3, line, sizeof line) && ends_with(line, ",1,3,0,0,0\n"), "tie row: %s",
          line);
    char tail[64];
    snprintf(tail, sizeof tail, ",2,3,0,0,%s\n", vp_eval_format_exact(m_near, num));
    CHECK(read_line(path, NB, line, sizeof line) && ends_with(line, tail),
          "last row: %s (wants ...%s)", line, tail);
    tdu_rmtree(dir_);
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    vp_bars_free(&f.bars);
}

/* ---- the decision for the bar after the span ------------------------------------------------- */

enum { NBARS = 520, A0 = 300, B0 = 460 };

/* A backtest of [A0, B0) of market mk with the tiny network m. */
static void run_net(vp_backend* b, const vp_model* m, const vpt_market* mk, vp_rollout_result* r) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument();
    c.episode_bars = 40;
    vp_rollout_data d = {&mk->bars, mk->atr, &mk->features, {A0, B0}};
    CHECK_OK(vp_backtest_run(b, m, &m->params, &d, &c, r));
}

static void test_next_decision(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 23), "market");
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model m;
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    CHECK_OK(vp_model_init(&m, b, &mc, 17));
    vp_rollout_result r;
    run_net(b, &m, &mk, &r);
    const int64_t o = r.n_points - 1;
    CHECK(!r.ruin.ruined && r.n_points == B0 - A0 && r.bar[o] == B0 - 1 && r.position[o] == 0 && r.action[4 * o] >= 0,
          "%lld points, last bar %lld, position %d, choice %d", (long long)r.n_points, (long long)r.bar[o],
          r.position[o], r.action[4 * o]);

    // rebuilt: the features up to bar B0 - 1 and the window's portfolio at its close — flat, no
    // bars held, its drawdown from the peak of its closes, time left 1 (capped), last size 0
    double peak = r.equity[0];
    for (int64_t i = 0; i < r.n_points; ++i) peak = r.equity[i] > peak ? r.equity[i] : peak;
    float pf[8] = {0, 0, 0, (float)((peak - r.equity[o]) / peak), 0, 0, 1.0f, 0};
    const vp_policy pol = vp_model_rollout_policy(&m, &m.params);
    vp_policy_work* w = NULL;
    CHECK_OK(vp_policy_work_init(&pol, 1, &w));
    int32_t bar = B0 - 1;
    vp_tensor it = vp_tensor_1d(&bar, VP_I32, VP_MEM_HOST, 1), pt = vp_tensor_2d(pf, VP_F32, VP_MEM_HOST, 1, 8);
    vp_tensor enc, q;
    CHECK_OK(vp_policy_encode(&pol, w, &mk.features, &it, 1, &enc));
    CHECK_OK(vp_policy_score(&pol, w, &enc, &pt, 1, &q));
    const vp_action_layout lay = vp_action_layout_env();
    int32_t a[4];
    const double margin = vp_action_greedy_margin(&lay, (const float*)q.data, a);
    vp_policy_work_free(&pol, w);
    CHECK(memcmp(a, r.action + 4 * o, sizeof a) == 0 && margin == r.margin[o],
          "next decision %d %d %d %d (margin %.17g), rebuilt %d %d %d %d (%.17g)", r.action[4 * o], r.action[4 * o + 1],
          r.action[4 * o + 2], r.action[4 * o + 3], r.margin[o], a[0], a[1], a[2], a[3], margin);

    // it reads the last bar's feature row: changing it moves the margin and nothing before it
    vpt_market alt = mk;
    float* feat = (float*)malloc(sizeof(float) * (size_t)(NBARS * mk.F));
    memcpy(feat, mk.feat, sizeof(float) * (size_t)(NBARS * mk.F));
    for (int j = 0; j < mk.F; ++j) feat[(int64_t)(B0 - 1) * mk.F + j] = 3.0f - feat[(int64_t)(B0 - 1) * mk.F + j];
    alt.features = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, NBARS, mk.F);
    vp_rollout_result r2;
    run_net(b, &m, &alt, &r2);
    int before = r2.n_points == r.n_points;
    for (int64_t i = 0; before && i < o; ++i)
        before = r2.equity[i] == r.equity[i] && memcmp(r2.action + 4 * i, r.action + 4 * i, 16) == 0 &&
                 r2.margin[i] == r.margin[i];
    CHECK(before && r2.margin[o] != r.margin[o], "a change of row %d: earlier points same %d, margin %.17g vs %.17g",
          B0 - 1, before, r2.n_points == r.n_points ? r2.margin[o] : 0.0, r.margin[o]);
    vp_rollout_result_free(&r2);
    free(feat);

    // and nothing after it: rows from B0 on poisoned, the same result bit for bit
    float* poisoned = (float*)malloc(sizeof(float) * (size_t)(NBARS * mk.F));
    memcpy(poisoned, mk.feat, sizeof(float) * (size_t)(NBARS * mk.F));
    for (int64_t i = (int64_t)B0 * mk.F; i < (int64_t)NBARS * mk.F; ++i) poisoned[i] = NAN;
    alt.features = vp_tensor_2d(poisoned, VP_F32, VP_MEM_HOST, NBARS, mk.F);
    run_net(b, &m, &alt, &r2);
    CHECK(vpt_results_equal(&r, &r2) && vpt_margin_diff(&r, &r2) == 0.0, "rows from %d changed the result", B0);
    vp_rollout_result_free(&r2);
    free(poisoned);

    // equity.csv's last row carries it
    char dir[256], path[400], line[1024], num[32], tail[96];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    vp_backtest_info info = {"net", NULL, NULL, NULL, &mk.bars, NULL, 0.01, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, dir));
    snprintf(path, sizeof path, "%s/equity.csv", dir);
    snprintf(tail, sizeof tail, ",%d,%d,%d,%d,%s\n", a[0], a[1], a[2], a[3], vp_eval_format_exact(margin, num));
    CHECK(read_line(path, B0 - A0, line, sizeof line) && ends_with(line, tail),
          "last row %s, wants ...%s", line, tail);
    tdu_rmtree(dir);
    vp_rollout_result_free(&r);
    vp_model_free(&m);
    vp_backend_free(b);
    vpt_market_free(&mk);
}

int main(void) {
    RUN_TEST(test_fragile_decisions);
    RUN_TEST(test_next_decision);
    return vpt_finish();
}
