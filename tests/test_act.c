/* `vulpes act`: the decision for the bar after the last one equals the exact backtest's next
 * decision over the same bars and checkpoint (choice, margin and scores bit for bit); each
 * branch's argmax of the kept scores is the choice; the JSON object reads them against the
 * last bar (contracts by the environment's rule, take-profit and stop-loss from the last
 * close at the tick's decimals, every score); no folder is made; a missing checkpoint is
 * named. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <unistd.h>

#include "env/env_rules.h"
#include "test_backtest_job_util.h"
#include "vulpes/action.h"
#include "vulpes/backtest.h"

/* The number at key of obj (NaN when absent or not a number). */
static double num(const cJSON* obj, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* price rounded to `decimals` decimals as the decimal text reads back. */
static double at_decimals(double v, int decimals) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return strtod(buf, NULL);
}

/* A level object: its atr_multiple is k and its price close + side x k x atr at the tick's
 * decimals, or null when k is 0 or the side flat. */
static void check_level(const cJSON* o, const char* what, int32_t k, int32_t side, double close, double atr, int dec) {
    CHECK(cJSON_IsObject(o), "%s is not an object", what);
    CHECK(num(o, "atr_multiple") == (double)k, "%s atr_multiple %g, chose %d", what, num(o, "atr_multiple"), k);
    const cJSON* p = cJSON_GetObjectItemCaseSensitive(o, "price");
    if (k == 0 || side == 0) {
        CHECK(cJSON_IsNull(p), "%s price should be null (k %d, side %d)", what, k, side);
        return;
    }
    const double want = at_decimals(side > 0 ? close + (double)k * atr : close - (double)k * atr, dec);
    CHECK(cJSON_IsNumber(p) && p->valuedouble == want, "%s price %.17g, want %.17g", what,
          cJSON_IsNumber(p) ? p->valuedouble : NAN, want);
}

static void test_tick_decimals(void) {
    CHECK(vp_tick_decimals(0.00001) == 5, "0.00001");
    CHECK(vp_tick_decimals(0.25) == 2, "0.25");
    CHECK(vp_tick_decimals(1.0) == 0, "1");
    CHECK(vp_tick_decimals(0.0) == -1, "0");
}

static void test_act_equals_backtest(void) {
    job_fixture f;
    fixture_init_as(&f, 41, 1);
    char out[400], none[400], got[400];
    snprintf(out, sizeof out, "%s/bt", f.dir);
    snprintf(none, sizeof none, "%s/act-none", f.dir);
    // the exact backtest over every bar after the warm-up, and act's rollout of the same job
    vp_backtest_job job = {f.ck, NULL, NULL, NULL, out, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result bt, act;
    CHECK_OK(vp_backtest_job_run(f.b, &job, &bt, got, sizeof got));
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    job.out = none;
    job.span_info = &si;
    vp_backtest_last_bar last;
    CHECK_OK(vp_backtest_job_rollout(f.b, &job, &act, &last));
    CHECK(access(none, F_OK) != 0, "vp_backtest_job_rollout made folder %s", none);
    CHECK(act.span.begin == bt.span.begin && act.span.end == NBARS && bt.span.end == NBARS, "spans [%lld, %lld) and "
          "[%lld, %lld)", (long long)act.span.begin, (long long)act.span.end, (long long)bt.span.begin,
          (long long)bt.span.end);
    CHECK(act.n_windows == 1 && bt.n_windows == 1 && act.n_points == bt.n_points, "windows or points differ");
    // the last bar
    CHECK(last.bar == NBARS - 1 && last.close == f.mk.bars.close[NBARS - 1] &&
          last.time_ms == f.mk.bars.time_ms[NBARS - 1] && last.atr > 0 && isfinite(last.atr),
          "last bar %lld close %.17g atr %g", (long long)last.bar, last.close, last.atr);
    CHECK(last.instrument.tick_size == f.cfg.instrument.tick_size &&
          last.instrument.max_position == f.cfg.instrument.max_position, "instrument");
    // the decision after the span: the backtest's, bit for bit, scores included
    const vp_action_layout l = vp_action_layout_env();
    const int64_t o = act.n_points - 1;
    const int32_t* a = act.action + VP_ENV_BRANCHES * o;
    CHECK(act.bar[o] == NBARS - 1 && a[0] >= 0, "no next decision at bar %lld", (long long)act.bar[o]);
    CHECK(memcmp(a, bt.action + VP_ENV_BRANCHES * o, sizeof(int32_t) * VP_ENV_BRANCHES) == 0, "choices differ");
    CHECK(memcmp(&act.margin[o], &bt.margin[o], sizeof(double)) == 0, "margins %.17g and %.17g", act.margin[o],
          bt.margin[o]);
    CHECK(act.n_heads == l.n_heads && bt.n_heads == 13 && act.next_q && bt.next_q, "n_heads %d", act.n_heads);
    CHECK(memcmp(act.next_q, bt.next_q, sizeof(float) * (size_t)l.n_heads) == 0, "scores differ");
    // each branch's argmax of the scores is its choice, and they give the margin
    for (int br = 0; br < l.n_branches; ++br)
        CHECK(vp_action_argmax(act.next_q + l.offset[br], l.size[br]) == a[br], "branch %d: argmax %d, chose %d", br,
              vp_action_argmax(act.next_q + l.offset[br], l.size[br]), a[br]);
    int32_t again[VP_ENV_BRANCHES];
    CHECK(vp_action_greedy_margin(&l, act.next_q, again) == act.margin[o], "margin of the kept scores");
    for (int k = 0; k < act.n_points - 1; ++k) CHECK(act.bar[k] < NBARS - 1, "point %d", k);

    // the JSON object
    cJSON* js = NULL;
    CHECK_OK(vp_act_json(&act, &last, f.ck, si.checks.data, &si.checks, &js));
    static const char* dirs[3] = {"short", "flat", "long"};
    const int32_t side = a[0] - 1;
    const cJSON* d = cJSON_GetObjectItemCaseSensitive(js, "direction");
    CHECK(cJSON_IsString(d) && strcmp(d->valuestring, dirs[a[0]]) == 0, "direction");
    CHECK(num(js, "bar") == NBARS - 1 && num(js, "last_close") == last.close && num(js, "atr") == last.atr, "bar");
    CHECK(num(js, "size_fraction") == 0.25 * (a[1] + 1), "size_fraction %g", num(js, "size_fraction"));
    const double contracts = side ? (double)vp_env_contracts(a[1], f.cfg.instrument.max_position) : 0.0;
    CHECK(num(js, "contracts") == contracts, "contracts %g, want %g", num(js, "contracts"), contracts);
    const int dec = vp_tick_decimals(f.cfg.instrument.tick_size);
    check_level(cJSON_GetObjectItemCaseSensitive(js, "take_profit"), "take_profit", a[2], side, last.close, last.atr,
                dec);
    check_level(cJSON_GetObjectItemCaseSensitive(js, "stop_loss"), "stop_loss", a[3], -side, last.close, last.atr,
                dec);
    const cJSON* q = cJSON_GetObjectItemCaseSensitive(js, "q");
    static const char* keys[4] = {"direction", "size", "take_profit", "stop_loss"};
    for (int br = 0; br < 4; ++br) {
        const cJSON* arr = cJSON_GetObjectItemCaseSensitive(q, keys[br]);
        CHECK(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == l.size[br], "q.%s", keys[br]);
        for (int j = 0; j < l.size[br]; ++j)
            CHECK((float)cJSON_GetArrayItem(arr, j)->valuedouble == act.next_q[l.offset[br] + j], "q.%s[%d]",
                  keys[br], j);
    }
    CHECK(num(js, "q_margin") == act.margin[o], "q_margin");
    const cJSON* fr = cJSON_GetObjectItemCaseSensitive(js, "fragile");
    const int fragile = act.margin[o] < VP_ACTION_FRAGILE_MARGIN;
    CHECK(cJSON_IsBool(fr) && cJSON_IsTrue(fr) == fragile, "fragile");
    const cJSON* w = cJSON_GetObjectItemCaseSensitive(js, "warnings");
    CHECK(cJSON_IsArray(w) && cJSON_GetArraySize(w) == si.checks.n_notes + fragile && si.checks.n_notes >= 1,
          "warnings: %d for %d notes", cJSON_GetArraySize(w), si.checks.n_notes);
    CHECK(strstr(cJSON_GetArrayItem(w, 0)->valuestring, "in-sample") != NULL, "the in-sample warning: %s",
          cJSON_GetArrayItem(w, 0)->valuestring);
    cJSON_Delete(js);

    // hand-computed levels for each direction: close 1.20075, ATR 0.00122417773, tick 0.00001
    vp_backtest_last_bar hand = last;
    hand.close = 1.20075, hand.atr = 0.0012241777297777188, hand.instrument.tick_size = 0.00001;
    hand.instrument.max_position = 3;
    int32_t* m = act.action + VP_ENV_BRANCHES * o;
    static const double tp[3] = {1.19953, NAN, 1.20197}, sl[3] = {1.20320, NAN, 1.19830}, n_ct[3] = {2, 0, 2};
    for (int dir = 0; dir < 3; ++dir) {
        m[0] = dir, m[1] = 1, m[2] = 1, m[3] = 2;
        CHECK_OK(vp_act_json(&act, &hand, NULL, NULL, NULL, &js));
        const cJSON* t = cJSON_GetObjectItemCaseSensitive(js, "take_profit");
        const cJSON* s = cJSON_GetObjectItemCaseSensitive(js, "stop_loss");
        if (dir == 1) {
            CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "price")) &&
                  cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "price")), "flat: prices should be null");
        } else {
            CHECK(num(t, "price") == tp[dir] && num(s, "price") == sl[dir], "%s: take-profit %.17g stop %.17g",
                  dirs[dir], num(t, "price"), num(s, "price"));
        }
        CHECK(num(js, "contracts") == n_ct[dir] && num(js, "size_fraction") == 0.5, "%s: contracts %g", dirs[dir],
              num(js, "contracts"));
        cJSON_Delete(js);
    }
    // no level: a null price
    m[0] = 2, m[2] = 0, m[3] = 0;
    CHECK_OK(vp_act_json(&act, &hand, NULL, NULL, NULL, &js));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "take_profit"), "price")),
          "no take-profit: null price");
    cJSON_Delete(js);
    // a result without a decision there is refused, naming the bar
    m[0] = -1;
    CHECK_STATUS(vp_act_json(&act, &hand, NULL, NULL, NULL, &js), VP_ERR_STATE, "no decision for the bar after bar 899");
    vp_rollout_result_free(&bt);
    vp_rollout_result_free(&act);

    // a missing checkpoint is named
    job.checkpoint = "/nonexistent/ck.safetensors";
    CHECK_STATUS(vp_backtest_job_rollout(f.b, &job, &act, &last), VP_ERR_IO, "/nonexistent/ck.safetensors");
    vp_rollout_result_free(&act);
    fixture_free(&f);
}

int main(void) {
    RUN_TEST(test_tick_decimals);
    RUN_TEST(test_act_equals_backtest);
    return vpt_finish();
}
