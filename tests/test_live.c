/* The live API (vulpes/live.h) against the exact backtest: a checkpoint opened on the CPU and
 * fed the bars of a file line by line decides at every bar what `vulpes backtest --span all`
 * decides there — choices, Q margin and every Q value bit for bit (the backtest's scores read
 * through a recording policy), the account's equity too — over every bar whose backtest window
 * does not yet see its end, also with a spread column; a close at or below the ruin level closes the account out at the
 * next open, as the backtest's window ends, and refuses later bars; bad lines and bars fail naming the line or bar and the field and
 * leave the handle as it was; prices at another scale are refused at the first decision unless
 * forced; the JSON object carries the decision's fields. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>

#include "test_backtest_job_util.h"
#include "vulpes/algo.h"
#include "vulpes/live.h"

/* A policy that passes every call to the DQN policy and keeps the scores it returns. */
typedef struct rec_policy {
    vp_policy inner;
    float* q;    /* [cap, A] the scores, in the order they were asked for */
    int64_t n, cap;
} rec_policy;

static vp_status rec_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    const rec_policy* r = (const rec_policy*)p->impl;
    return r->inner.ops->work_init(&r->inner, batch, out);
}

static void rec_work_free(vp_policy_work* w) { vp_model_policy_ops.work_free(w); }

static vp_status rec_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* f, const vp_tensor* idx,
                            int64_t n, vp_tensor* enc) {
    const rec_policy* r = (const rec_policy*)p->impl;
    return r->inner.ops->encode(&r->inner, w, f, idx, n, enc);
}

static vp_status rec_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* pf,
                           int64_t n, vp_tensor* scores) {
    rec_policy* r = (rec_policy*)p->impl;
    VP_TRY(r->inner.ops->score(&r->inner, w, enc, pf, n, scores));
    const int64_t A = p->layout.n_heads;
    VP_REQUIRE(r->n + n <= r->cap, VP_ERR_SHAPE, "recording policy: more than %lld score rows", (long long)r->cap);
    memcpy(r->q + r->n * A, scores->data, sizeof(float) * (size_t)(n * A));
    r->n += n;
    return VP_OK;
}

static const vp_policy_ops rec_ops = {"recording", rec_work_init, rec_work_free, rec_encode, rec_score};

/* The config a checkpoint holds. */
static void checkpoint_config(const char* ck, vp_config* cfg) {
    vp_checkpoint* c = NULL;
    CHECK_OK(vp_checkpoint_open(&c, ck));
    vp_config_defaults(cfg);
    CHECK_OK(vp_config_load_string(cfg, vp_checkpoint_meta(c, "config"), "checkpoint"));
    vp_checkpoint_close(c);
}

/* The exact backtest over every bar after the warm-up, as the backtest job runs it, with every
 * score the policy returned into rec (one row per step, then the decision after the span). */
static void recorded_backtest(const job_fixture* f, vp_rollout_result* out, rec_policy* rec) {
    vp_config cfg;
    checkpoint_config(f->ck, &cfg);
    vp_bars bars;
    CHECK_OK(vp_bars_load_csv(f->csv, NULL, &bars, NULL));
    vp_train_data td;
    CHECK_OK(vp_train_data_prepare(&td, &cfg, &bars));
    vp_algo algo;
    CHECK_OK(vp_algo_create(&algo, &cfg, f->b, &td, VP_ALGO_INFER));
    CHECK_OK(vp_algo_load_params(&algo, f->ck, VP_PARAMS_ONLINE));
    CHECK_OK(vp_algo_policy(&algo, VP_PARAMS_ONLINE, &rec->inner));
    vp_policy pol = rec->inner;
    pol.ops = &rec_ops;
    pol.impl = rec;
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = algo.instrument;
    c.episode_bars = algo.env.episode_bars;
    c.ruin_fraction = algo.env.ruin_fraction;
    CHECK_OK(vp_annual_measure(td.bars.time_ms, td.bars.n, &c.annual));
    c.annual.risk_free_rate = cfg.metrics.risk_free_rate;
    const int64_t a = vp_train_data_warmup(&cfg);
    vp_rollout_data d = {&td.bars, td.atr, algo.features, {a, td.bars.n}};
    CHECK_OK(vp_rollout_run(f->b, &pol, &d, &c, out));
    vp_algo_free(&algo);
    vp_train_data_free(&td);
}

/* Feeds the lines of the CSV file at path (after its header) to h; decisions into d[bar]. */
static int64_t feed_file(vp_live* h, const char* path, vp_decision* d, int* decided, int64_t n_max,
                         int bad_at) {
    FILE* fp = fopen(path, "r");
    CHECK(fp != NULL, "open %s", path);
    char line[512];
    int64_t line_no = 0, n = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        if (++line_no == 1) continue;
        vp_live_bar bar;
        CHECK_OK(vp_live_parse_csv(line, line_no, &bar));
        if (n == bad_at) {
            // bad bars change nothing: each fails naming the bar and the field
            vp_live_bar x = bar;
            x.close = NAN;
            int dd = 0;
            CHECK_STATUS(vp_live_push(h, &x, NULL, &dd), VP_ERR_PARSE, "close is nan");
            x = bar;
            x.time_ms = d[n - 1].time_ms;
            CHECK_STATUS(vp_live_push(h, &x, NULL, &dd), VP_ERR_PARSE, "time");
            x = bar;
            x.high = x.low * 0.5;
            CHECK_STATUS(vp_live_push(h, &x, NULL, &dd), VP_ERR_PARSE, "high");
            x = bar;
            x.volume = -1.0;
            CHECK_STATUS(vp_live_push(h, &x, NULL, &dd), VP_ERR_PARSE, "volume");
            CHECK(vp_live_bars(h) == n && dd == 0, "refused bars were taken: %lld bars", (long long)vp_live_bars(h));
        }
        CHECK(n < n_max, "more than %lld bars", (long long)n_max);
        decided[n] = 0;
        CHECK_OK(vp_live_push(h, &bar, &d[n], &decided[n]));
        if (!decided[n]) d[n].time_ms = bar.time_ms;
        ++n;
    }
    if (fp) fclose(fp);
    return n;
}

static void test_live_equals_backtest(void) {
    job_fixture f;
    fixture_init_as(&f, 41, 1);
    // the backtest job's rollout, and the same backtest with its scores recorded
    vp_backtest_job job = {f.ck, NULL, NULL, NULL, NULL, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result bt, rb;
    vp_backtest_last_bar last;
    CHECK_OK(vp_backtest_job_rollout(f.b, &job, &bt, &last));
    rec_policy rec;
    memset(&rec, 0, sizeof rec);
    rec.cap = NBARS + 1;
    rec.q = (float*)malloc(sizeof(float) * (size_t)rec.cap * VP_DECISION_MAX_HEADS);
    recorded_backtest(&f, &rb, &rec);
    const int64_t a = bt.span.begin, steps = bt.span.end - a - 1;
    CHECK(rb.span.begin == a && rb.n_points == bt.n_points && rec.n == steps + 1, "spans or score rows differ");
    CHECK(memcmp(rb.action, bt.action, sizeof(int32_t) * 4 * (size_t)bt.n_points) == 0,
          "the recorded backtest's choices differ from the job's");
    // the live handle fed the file line by line, bad bars offered in the middle
    vp_live* h = NULL;
    CHECK_OK(vp_live_open(&h, f.ck, NULL));
    CHECK(vp_live_warmup(h) == a, "warm-up %lld, the backtest starts at %lld", (long long)vp_live_warmup(h),
          (long long)a);
    vp_decision* d = (vp_decision*)calloc(NBARS, sizeof *d);
    int* decided = (int*)calloc(NBARS, sizeof(int));
    const int64_t n = feed_file(h, f.csv, d, decided, NBARS, 500);
    CHECK(n == NBARS && vp_live_bars(h) == NBARS, "%lld bars fed", (long long)n);
    // every bar up to the one env.episode_bars before the span's last: the backtest's decision
    const int64_t E = 64, A = vp_action_layout_env().n_heads, upto = NBARS - 1 - E;
    int64_t compared = 0, diff_act = 0, diff_q = 0, diff_eq = 0, moves = 0, held = 0, first = -1;
    for (int64_t t = 0; t < NBARS; ++t) CHECK(decided[t] == (t >= a), "bar %lld decided %d", (long long)t, decided[t]);
    for (int64_t t = a; t <= upto; ++t) {
        const int64_t o = t - a;
        const vp_decision* x = &d[t];
        const int act = memcmp(x->action, bt.action + 4 * o, sizeof x->action) != 0 ||
                        memcmp(&x->q_margin, &bt.margin[o], sizeof(double)) != 0;
        const int q = x->n_heads != A || memcmp(x->q, rec.q + o * A, sizeof(float) * (size_t)A) != 0;
        const int eq = x->equity != bt.equity[o] || x->position != bt.position[o];
        if ((act || q || eq) && first < 0) first = t;
        diff_act += act, diff_q += q, diff_eq += eq;
        moves += t > a && x->action[0] != d[t - 1].action[0];
        held += x->position != 0;
        compared += x->bar == t;
    }
    CHECK(compared == upto - a + 1 && diff_act == 0 && diff_q == 0 && diff_eq == 0,
          "%lld of %lld decisions compared; %lld choices or margins, %lld Q rows, %lld equities differ (first at bar "
          "%lld)", (long long)compared, (long long)(upto - a + 1), (long long)diff_act, (long long)diff_q,
          (long long)diff_eq, (long long)first);
    CHECK(compared > 500 && moves > 0 && held > 0, "a vacuous comparison: %lld decisions, %lld changes of direction, "
          "%lld bars holding a position", (long long)compared, (long long)moves, (long long)held);
    // the JSON object of the last decision
    char* text = NULL;
    const vp_decision* z = &d[NBARS - 1];
    CHECK_OK(vp_live_decision_json(h, z, 0, &text));
    cJSON* o = cJSON_Parse(text);
    static const char* dirs[3] = {"short", "flat", "long"};
    const cJSON* dir = cJSON_GetObjectItemCaseSensitive(o, "direction");
    CHECK(cJSON_IsString(dir) && strcmp(dir->valuestring, dirs[z->action[0]]) == 0, "direction in %s", text);
    const cJSON* bar = cJSON_GetObjectItemCaseSensitive(o, "bar");
    CHECK(cJSON_IsNumber(bar) && bar->valuedouble == (double)(NBARS - 1), "bar in %s", text);
    const cJSON* qd = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "q"), "size");
    CHECK(cJSON_GetArraySize(qd) == 4 && (float)cJSON_GetArrayItem(qd, 2)->valuedouble == z->q[3 + 2],
          "q.size in %s", text);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "data")), "data is null in %s", text);
    cJSON_Delete(o);
    free(text);
    vp_live_close(h);
    free(d);
    free(decided);
    free(rec.q);
    vp_rollout_result_free(&bt);
    vp_rollout_result_free(&rb);
    fixture_free(&f);
}

static void test_parse_errors(void) {
    vp_live_bar b;
    CHECK_OK(vp_live_parse_csv("2017-01-02T03:00:00Z, 1.5, 1.75,1.25,1.5\r\n", 3, &b));
    CHECK(b.time_ms == INT64_C(1483326000000) && b.open == 1.5 && b.high == 1.75 && b.low == 1.25 && b.close == 1.5 &&
          b.volume == 0.0 && !b.has_spread, "parsed bar");
    CHECK_OK(vp_live_parse_csv("1483326000,1,2,1,2,300,0.25", 4, &b));
    CHECK(b.volume == 300.0 && b.has_spread && b.spread == 0.25, "volume and spread");
    CHECK_STATUS(vp_live_parse_csv("2017-01-02,1,2,1", 7, &b), VP_ERR_PARSE, "line 7: 4 fields");
    CHECK_STATUS(vp_live_parse_csv("2017-01-02,1,2,1,2,3,4,5", 8, &b), VP_ERR_PARSE, "line 8: 8 fields");
    CHECK_STATUS(vp_live_parse_csv("2017-01-02,1,2,1,nan", 9, &b), VP_ERR_PARSE, "line 9, field close: nan");
    CHECK_STATUS(vp_live_parse_csv("2017-01-02,1,2,x,2", 10, &b), VP_ERR_PARSE, "line 10, field low: 'x'");
    CHECK_STATUS(vp_live_parse_csv("yesterday,1,2,1,2", 11, &b), VP_ERR_PARSE, "line 11, field time");
}

static void test_scale_refused(void) {
    job_fixture f;
    fixture_init_as(&f, 43, 1);
    vp_live_opts o = vp_live_opts_default();
    for (int force = 0; force < 2; ++force) {
        o.force = force;
        vp_live* h = NULL;
        CHECK_OK(vp_live_open(&h, f.ck, &o));
        const int64_t a = vp_live_warmup(h);
        vp_decision d;
        int decided = 0;
        const vp_bars* b = &f.mk.bars;
        vp_status s = VP_OK;
        for (int64_t t = 0; t <= a && s == VP_OK; ++t) {
            vp_live_bar x = {b->time_ms[t], 100 * b->open[t], 100 * b->high[t], 100 * b->low[t], 100 * b->close[t],
                             b->volume[t], 0, 0.0};
            s = vp_live_push(h, &x, &d, &decided);
        }
        if (!force) {
            CHECK(s == VP_ERR_INVALID_ARG && strstr(vp_last_error(), "refused") && vp_live_bars(h) == a,
                  "unforced: %s, %lld bars", vp_last_error(), (long long)vp_live_bars(h));
        } else {
            CHECK(s == VP_OK && decided && vp_live_n_notes(h) >= 1 && strstr(vp_live_note(h, vp_live_n_notes(h) - 1),
                  "WARNING"), "forced: %s, %d notes", vp_last_error(), vp_live_n_notes(h));
        }
        vp_live_close(h);
    }
    CHECK_STATUS(vp_live_open(&(vp_live*){NULL}, "no/such.safetensors", NULL), VP_ERR_IO, "no/such.safetensors");
    fixture_free(&f);
}

static void test_spread_column(void) {
    job_fixture f;
    fixture_init_as(&f, 47, 1);
    // the bars again with a spread column of 1 to 3 ticks, and the exact backtest over them
    vp_bars sb;
    CHECK_OK(vp_bars_copy(&f.mk.bars, 0, NBARS, &sb));
    CHECK_OK(vp_bars_alloc_spread(&sb));
    for (int64_t t = 0; t < NBARS; ++t) sb.spread[t] = f.cfg.instrument.tick_size * (double)(1 + t % 3);
    char csv[400];
    snprintf(csv, sizeof csv, "%s/spread.csv", f.dir);
    CHECK_OK(vp_bars_save_csv(&sb, csv, -1));
    vp_backtest_job job = {f.ck, csv, NULL, NULL, NULL, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result bt;
    vp_backtest_last_bar last;
    CHECK_OK(vp_backtest_job_rollout(f.b, &job, &bt, &last));
    // the live handle fed the file's 7-column lines: the backtest's decisions and equity
    vp_live* h = NULL;
    CHECK_OK(vp_live_open(&h, f.ck, NULL));
    vp_decision* d = (vp_decision*)calloc(NBARS, sizeof *d);
    int* decided = (int*)calloc(NBARS, sizeof(int));
    CHECK(feed_file(h, csv, d, decided, NBARS, -1) == NBARS, "bars fed");
    const int64_t a = bt.span.begin, upto = NBARS - 1 - 64;
    int64_t diff = 0, first = -1, traded = 0;
    for (int64_t t = a; t <= upto; ++t) {
        const int64_t o = t - a;
        const int bad = memcmp(d[t].action, bt.action + 4 * o, sizeof d[t].action) != 0 ||
                        memcmp(&d[t].q_margin, &bt.margin[o], sizeof(double)) != 0 || d[t].equity != bt.equity[o];
        if (bad && diff++ == 0) first = t;
        traded += t > a && d[t].position != d[t - 1].position;
    }
    CHECK(diff == 0 && traded > 0, "%lld decisions differ (first at bar %lld); %lld position changes", (long long)diff,
          (long long)first, (long long)traded);
    // the spread column was read: without it (the instrument's spread) the same bars end elsewhere
    vp_backtest_job plain = {f.ck, NULL, NULL, NULL, NULL, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result pb;
    CHECK_OK(vp_backtest_job_rollout(f.b, &plain, &pb, &last));
    CHECK(pb.n_points == bt.n_points && pb.equity[pb.n_points - 1] != bt.equity[bt.n_points - 1],
          "the spread column changed nothing (final equity %.17g)", bt.equity[bt.n_points - 1]);
    vp_rollout_result_free(&pb);
    vp_live_close(h);
    free(d);
    free(decided);
    vp_bars_free(&sb);
    vp_rollout_result_free(&bt);
    fixture_free(&f);
}

static void test_ruin_closes_out(void) {
    job_fixture f;
    fixture_init_as(&f, 41, 1);
    // the same network with a ruin level just under the initial equity: the first loss ruins
    vp_config cfg = f.cfg;
    cfg.env.ruin_fraction = 0.9999;
    char ck[400];
    snprintf(ck, sizeof ck, "%s/ruin.safetensors", f.dir);
    CHECK(write_checkpoint(f.b, &cfg, &f.rec, ck), "checkpoint: %s", vp_last_error());
    vp_backtest_job job = {ck, NULL, NULL, NULL, NULL, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result bt;
    vp_backtest_last_bar last;
    CHECK_OK(vp_backtest_job_rollout(f.b, &job, &bt, &last));
    CHECK(bt.ruin.ruined && bt.ruin.bar + 2 < NBARS - 64, "the backtest should ruin early (ruined %d at bar %lld)",
          bt.ruin.ruined, (long long)bt.ruin.bar);
    vp_live* h = NULL;
    CHECK_OK(vp_live_open(&h, ck, NULL));
    const vp_bars* b = &f.mk.bars;
    int64_t closing = -1, t = 0;
    vp_status s = VP_OK;
    for (; t < NBARS && s == VP_OK; ++t) {
        vp_live_bar x = {b->time_ms[t], b->open[t], b->high[t], b->low[t], b->close[t], b->volume[t], 0, 0.0};
        vp_decision d;
        int decided = 0;
        s = vp_live_push(h, &x, &d, &decided);
        if (s != VP_OK) break;
        const int64_t o = t - bt.span.begin;
        if (decided && closing < 0)
            CHECK(memcmp(d.action, bt.action + 4 * o, sizeof d.action) == 0 && d.equity == bt.equity[o],
                  "bar %lld: the decision or equity differs from the backtest's", (long long)t);
        if (decided && d.closing_out && closing < 0) closing = t;
        if (closing >= 0 && t == closing + 1) CHECK(!decided, "a decision after the close-out, at bar %lld", (long long)t);
    }
    // the close-out decision at the ruin bar, the account closed at the next bar's open, then refused
    CHECK(closing == bt.ruin.bar, "closing out at bar %lld, the backtest ruined at bar %lld", (long long)closing,
          (long long)bt.ruin.bar);
    CHECK(s == VP_ERR_STATE && t == closing + 2 && strstr(vp_last_error(), "closed out at bar"),
          "bar %lld: %s (%s)", (long long)t, vp_status_name(s), vp_last_error());
    vp_live_close(h);
    vp_rollout_result_free(&bt);
    fixture_free(&f);
}

int main(void) {
    RUN_TEST(test_parse_errors);
    RUN_TEST(test_live_equals_backtest);
    RUN_TEST(test_scale_refused);
    RUN_TEST(test_spread_column);
    RUN_TEST(test_ruin_closes_out);
    return vpt_finish();
}
