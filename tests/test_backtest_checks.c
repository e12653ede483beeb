/* The data checks of `vulpes backtest` against the checkpoint's record of its training data
 * (a synthetic market of hourly bars saved as a CSV file): daily bars warned about, prices
 * 100x or 1/20 of the training's refused without force (no folder made) and run with it,
 * 9x accepted; the first order beyond instrument.max_leverage warned about; the training file
 * itself without a notice, a copy, another file and the file changed in place each noted, the
 * recorded file changed or gone refused when no --data is given; an older checkpoint noted;
 * a span over training or validation bars warned about as in-sample; every warning and notice
 * in summary.json's "warnings" and the report's heading; every instrument.* key,
 * data.price_side and metrics.risk_free_rate overridable, other keys refused. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "data/hash.h"
#include "test_backtest_job_util.h"

/* Runs a job (force as given) with the span info into *si; the result freed. */
static vp_status run(job_fixture* f, const char* data, const char* span, const char* out, int force,
                     vp_backtest_span_info* si, int n_over, char** over) {
    vp_backtest_job job = {f->ck, data, NULL, NULL, out, force, 1, 1, span, si, n_over, over};
    vp_rollout_result r;
    char got[400];
    vp_status s = vp_backtest_job_run(f->b, &job, &r, got, sizeof got);
    vp_rollout_result_free(&r);
    return s;
}

/* Whether the checks' notes are exactly want[n], in order. */
static int notes_are(const vp_backtest_checks* c, const char* const* want, int n) {
    int ok = c->n_notes == n;
    for (int i = 0; ok && i < n; ++i) ok = strcmp(c->notes[i], want[i]) == 0;
    if (!ok)
        for (int i = 0; i < c->n_notes; ++i) fprintf(stderr, "    note %d: %s\n", i, c->notes[i]);
    return ok;
}

/* Whether out/summary.json's "warnings" array is exactly the notes of c. */
static int summary_warnings_are(const char* out, const vp_backtest_checks* c) {
    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", out);
    char* text = vpt_slurp(path, NULL);
    cJSON* root = text ? cJSON_Parse(text) : NULL;
    cJSON* w = root ? cJSON_GetObjectItemCaseSensitive(root, "warnings") : NULL;
    int ok = c->n_notes == 0 ? w == NULL : cJSON_IsArray(w) && cJSON_GetArraySize(w) == c->n_notes;
    for (int i = 0; ok && w && i < c->n_notes; ++i) {
        const cJSON* e = cJSON_GetArrayItem(w, i);
        ok = cJSON_IsString(e) && strcmp(e->valuestring, c->notes[i]) == 0;
    }
    cJSON_Delete(root);
    free(text);
    return ok;
}

/* Saves the fixture's bars with times `spacing_ms` apart and prices times `scale` as dir/name. */
static void save_variant(const job_fixture* f, const char* name, int64_t spacing_ms, double scale, char* path,
                         size_t n) {
    vp_bars b;
    CHECK_OK(vp_bars_alloc(&b, f->mk.bars.n));
    for (int64_t i = 0; i < b.n; ++i) {
        b.time_ms[i] = f->mk.bars.time_ms[0] + i * spacing_ms;
        b.open[i] = f->mk.bars.open[i] * scale, b.high[i] = f->mk.bars.high[i] * scale;
        b.low[i] = f->mk.bars.low[i] * scale, b.close[i] = f->mk.bars.close[i] * scale;
        b.volume[i] = f->mk.bars.volume[i];
    }
    snprintf(path, n, "%s/%s", f->dir, name);
    CHECK_OK(vp_bars_save_csv(&b, path, -1));
    vp_bars_free(&b);
}

/* The absolute path of a file that exists, into out[n]. */
static const char* real(const char* path, char* out, size_t n) {
    char* r = realpath(path, NULL);
    snprintf(out, n, "%s", r ? r : "(none)");
    free(r);
    return out;
}

/* Daily bars against hourly training: a warning naming both, in summary.json and the heading. */
static void test_interval(void) {
    job_fixture fx;
    fixture_init_as(&fx, 41, 1);
    char daily[400], out[400], a[600], b[600], want[2][1400];
    save_variant(&fx, "daily.csv", 86400000, 1.0, daily, sizeof daily);
    snprintf(out, sizeof out, "%s/daily", fx.dir);
    vp_backtest_span_info si;
    CHECK_OK(run(&fx, daily, "all", out, 0, &si, 0, NULL));
    snprintf(want[0], sizeof want[0], "notice: the data %s is not the training data %s", real(daily, a, sizeof a),
             real(fx.csv, b, sizeof b));
    snprintf(want[1], sizeof want[1], "WARNING: the bars are 1 day apart, the network was trained on bars 1 hour apart "
             "(median spacings of 86400 s and 3600 s): its features and episodes measure other spans of time here");
    const char* w[2] = {want[0], want[1]};
    CHECK(notes_are(&si.checks, w, 2) && si.checks.recorded && !si.checks.refused, "interval notes");
    CHECK(strcmp(si.checks.brief, "bars 1 day apart, trained on 1 hour") == 0, "brief '%s'", si.checks.brief);
    CHECK(summary_warnings_are(out, &si.checks), "summary.json warnings");
    char path[600];
    snprintf(path, sizeof path, "%s/report.html", out);
    char* page = vpt_slurp(path, NULL);
    CHECK(page && strstr(page, "<h1>backtest (WARNING: bars 1 day apart, trained on 1 hour)"), "report heading");
    free(page);
    // bars 1.4 hours apart: within the factor 1.5, no warning
    save_variant(&fx, "slow.csv", 5040000, 1.0, daily, sizeof daily);
    snprintf(out, sizeof out, "%s/slow", fx.dir);
    CHECK_OK(run(&fx, daily, "all", out, 0, &si, 0, NULL));
    CHECK(si.checks.n_notes == 1 && strncmp(si.checks.notes[0], "notice: ", 8) == 0, "%d notes at 1.4 hours",
          si.checks.n_notes);
    fixture_free(&fx);
}

/* Prices 100x and 1/20 of the training's refused (no folder), then run with force and warned
 * about; 9x accepted without a word. */
static void test_scale(void) {
    job_fixture fx;
    fixture_init_as(&fx, 42, 1);
    char big[400], out[400], needle[600];
    vp_backtest_span_info si;
    const double scales[2] = {100.0, 0.05};
    const char* words[2] = {"100x", "0.05x"};
    for (int k = 0; k < 2; ++k) {
        save_variant(&fx, k ? "small.csv" : "big.csv", 3600000, scales[k], big, sizeof big);
        snprintf(out, sizeof out, "%s/scaled%d", fx.dir, k);
        // the training span of the scaled file: its median close is the training's times the scale
        vp_bars bars;
        vp_load_opts lo = tdu_nocache();
        CHECK_OK(vp_bars_load_csv(big, &lo, &bars, NULL));
        double median = 0;
        vp_train_data td;
        CHECK_OK(vp_train_data_load(&td, &fx.cfg));
        CHECK_OK(vp_bars_median_close(&bars, td.split.train, &median));
        vp_train_data_free(&td);
        vp_bars_free(&bars);
        snprintf(needle, sizeof needle, "refused: the prices are %s the training's (median close %.6g over the span, "
                 "%.6g over the training span; the training data's closes ran from %.6g to %.6g). A network trained "
                 "on one price scale does not trade another; backtest data at the training's scale, or give --force to "
                 "run it anyway", words[k], median, fx.rec.train_median_close, fx.rec.close_min, fx.rec.close_max);
        CHECK_STATUS(run(&fx, big, "train", out, 0, &si, 0, NULL), VP_ERR_INVALID_ARG, needle);
        CHECK(si.checks.refused && !vpt_exists(out, NULL), "a refused backtest made %s", out);
        // with force: the run, a warning in summary.json
        CHECK_OK(run(&fx, big, "train", out, 1, &si, 0, NULL));
        char want[1400];
        snprintf(want, sizeof want, "WARNING: the prices are %s the training's (median close %.6g over the span, %.6g "
                 "over the training span; the training data's closes ran from %.6g to %.6g); run anyway (--force)",
                 words[k], median, fx.rec.train_median_close, fx.rec.close_min, fx.rec.close_max);
        int found = 0;
        for (int i = 0; i < si.checks.n_notes; ++i) found |= strcmp(si.checks.notes[i], want) == 0;
        CHECK(found && !si.checks.refused && summary_warnings_are(out, &si.checks), "forced scale %s: no '%s'",
              words[k], want);
    }
    // 9x: no refusal, no scale warning
    save_variant(&fx, "nine.csv", 3600000, 9.0, big, sizeof big);
    snprintf(out, sizeof out, "%s/nine", fx.dir);
    CHECK_OK(run(&fx, big, "train", out, 0, &si, 0, NULL));
    for (int i = 0; i < si.checks.n_notes; ++i)
        CHECK(strstr(si.checks.notes[i], "prices") == NULL, "9x warned: %s", si.checks.notes[i]);
    fixture_free(&fx);
}

/* The first order at full size beyond instrument.max_leverage x equity: the figures, and that
 * orders will be cut; no limit (0) or a high one: nothing. */
static void test_leverage(void) {
    job_fixture fx;
    fixture_init_as(&fx, 43, 1);
    char out[400], want[1000];
    vp_backtest_span_info si;
    vp_train_data td;
    CHECK_OK(vp_train_data_load(&td, &fx.cfg));
    const double close = td.bars.close[td.split.test.begin];
    vp_train_data_free(&td);
    // 4 contracts x close (about 100) x 10 = about 4000 against 0.001 x 100000 = 100
    char lev[] = "instrument.max_leverage=0.001";
    char* over[] = {lev};
    snprintf(out, sizeof out, "%s/lev", fx.dir);
    CHECK_OK(run(&fx, NULL, NULL, out, 0, &si, 1, over));
    snprintf(want, sizeof want, "WARNING: at full size (instrument.max_position 4) the first bar's position is "
             "worth %.0f (close %g x instrument.multiplier 10 per contract), %.3gx the equity of 100000; "
             "instrument.max_leverage 0.001 allows 100, so orders will be cut to the limit", 4 * close * 10, close,
             4 * close * 10 / 100000);
    const char* w[1] = {want};
    CHECK(notes_are(&si.checks, w, 1) && summary_warnings_are(out, &si.checks), "leverage warning");
    CHECK(close > 50 && close < 200, "first close %g", close);
    // no limit, and a limit above the order
    char none[] = "instrument.max_leverage=0", high[] = "instrument.max_leverage=1";
    char* quiet[2] = {none, high};
    for (int k = 0; k < 2; ++k) {
        snprintf(out, sizeof out, "%s/quiet%d", fx.dir, k);
        CHECK_OK(run(&fx, NULL, NULL, out, 0, &si, 1, &quiet[k]));
        CHECK(si.checks.n_notes == 0 && summary_warnings_are(out, &si.checks), "%s: %d notes", quiet[k],
              si.checks.n_notes);
    }
    fixture_free(&fx);
}

/* The training file itself: no notice; a copy, another file and the same path changed: a notice
 * naming both; without --data the recorded file changed or gone is refused; an older
 * checkpoint is noted. */
static void test_identity(void) {
    job_fixture fx;
    fixture_init_as(&fx, 44, 1);
    char out[400], copy[400], other[400], a[600], b[600], want[1400];
    vp_backtest_span_info si;
    // no --data: the recorded file, unchanged; --data the same file: the same
    snprintf(out, sizeof out, "%s/same", fx.dir);
    CHECK_OK(run(&fx, NULL, NULL, out, 0, &si, 0, NULL));
    CHECK(si.checks.n_notes == 0 && si.checks.from_record && strcmp(si.checks.data, fx.rec.source) == 0 &&
              si.overlap_known && summary_warnings_are(out, &si.checks),
          "the training data: %d notes, data %s", si.checks.n_notes, si.checks.data);
    CHECK_OK(run(&fx, fx.csv, NULL, out, 1, &si, 0, NULL));
    CHECK(si.checks.n_notes == 0 && !si.checks.from_record && si.overlap_known, "--data itself: %d notes",
          si.checks.n_notes);
    // a byte-identical copy: the same bars at another path (the overlap counted)
    snprintf(copy, sizeof copy, "%s/copy.csv", fx.dir);
    CHECK_OK(vp_bars_save_csv(&fx.mk.bars, copy, -1));
    CHECK_OK(run(&fx, copy, NULL, out, 1, &si, 0, NULL));
    snprintf(want, sizeof want, "notice: the data %s holds the same bars as the training data %s (same content at "
             "another path)", real(copy, a, sizeof a), fx.rec.source);
    const char* w[1] = {want};
    CHECK(notes_are(&si.checks, w, 1) && si.overlap_known, "copy");
    // another file: named with the training's, the overlap unknown
    save_variant(&fx, "other.csv", 3600000, 1.01, other, sizeof other);
    CHECK_OK(run(&fx, other, NULL, out, 1, &si, 0, NULL));
    snprintf(want, sizeof want, "notice: the data %s is not the training data %s", real(other, a, sizeof a),
             fx.rec.source);
    CHECK(notes_are(&si.checks, w, 1) && !si.overlap_known &&
              strcmp(si.unknown_why, "the data is not the bars the training run was trained on") == 0,
          "other file: why '%s'", si.unknown_why);
    // the training file changed in place: a notice with --data, refused without
    fx.mk.bars.close[NBARS - 1] = fx.mk.bars.high[NBARS - 1];
    CHECK_OK(vp_bars_save_csv(&fx.mk.bars, fx.csv, -1));
    size_t len = 0;
    char* bytes = vpt_read_file(fx.csv, NULL, &len);
    const unsigned long long h = bytes ? (unsigned long long)vp_hash64(bytes, len, 0) : 0;
    free(bytes);
    CHECK_OK(run(&fx, fx.csv, NULL, out, 1, &si, 0, NULL));
    snprintf(want, sizeof want, "notice: %s is not the file the network was trained on: its content changed (now %zu "
             "bytes, xxh64:%016llx; at training %lld bytes, xxh64:%016llx)", fx.rec.source, len, h,
             (long long)fx.rec.bytes, (unsigned long long)fx.rec.hash);
    CHECK(notes_are(&si.checks, w, 1) && !si.overlap_known, "changed in place");
    snprintf(out, sizeof out, "%s/changed", fx.dir);
    snprintf(want, sizeof want, "the checkpoint's training data %s has changed since training (now %zu bytes, "
             "xxh64:%016llx; then %lld bytes, xxh64:%016llx): give --data FILE", fx.rec.source, len, h,
             (long long)fx.rec.bytes, (unsigned long long)fx.rec.hash);
    CHECK_STATUS(run(&fx, NULL, NULL, out, 0, &si, 0, NULL), VP_ERR_INVALID_ARG, want);
    CHECK(!vpt_exists(out, NULL), "a refused backtest made its folder");
    // the recorded file gone
    snprintf(a, sizeof a, "%s/moved.csv", fx.dir);
    CHECK(rename(fx.csv, a) == 0, "rename");
    snprintf(want, sizeof want, "the checkpoint's training data %s cannot be read (No such file or directory): give "
             "--data FILE", fx.rec.source);
    CHECK_STATUS(run(&fx, NULL, NULL, out, 0, &si, 0, NULL), VP_ERR_IO, want);
    CHECK(!vpt_exists(out, NULL), "a refused backtest made its folder");
    fixture_free(&fx);
    // an older checkpoint: the checks that need the record cannot run
    fixture_init(&fx, 44);
    snprintf(out, sizeof out, "%s/older", fx.dir);
    CHECK_OK(run(&fx, NULL, NULL, out, 0, &si, 0, NULL));
    snprintf(b, sizeof b, "notice: the checkpoint holds no record of its training data (it was written by an earlier "
             "vulpes): the bar interval, price scale and data identity checks cannot run");
    const char* old[1] = {b};
    CHECK(notes_are(&si.checks, old, 1) && !si.checks.recorded && summary_warnings_are(out, &si.checks), "older");
    fixture_free(&fx);
}

/* A span over training or validation bars: a WARNING line saying the result is in-sample. */
static void test_in_sample(void) {
    job_fixture fx;
    fixture_init_as(&fx, 45, 1);
    vp_train_data td;
    CHECK_OK(vp_train_data_load(&td, &fx.cfg));
    const vp_split sp = td.split;
    vp_train_data_free(&td);
    char out[400], want[600];
    vp_backtest_span_info si;
    static const char* spans[3] = {"train", "val", "all"};
    for (int k = 0; k < 3; ++k) {
        snprintf(out, sizeof out, "%s/%s", fx.dir, spans[k]);
        CHECK_OK(run(&fx, NULL, spans[k], out, 0, &si, 0, NULL));
        const int64_t tr = k == 1 ? 0 : vp_span_len(sp.train), va = k == 0 ? 0 : vp_span_len(sp.val);
        snprintf(want, sizeof want, "WARNING: the result is in-sample: %lld of the %lld bars were seen in training "
                 "(%lld train, %lld validation)", (long long)(tr + va), (long long)si.n_bars, (long long)tr,
                 (long long)va);
        const char* w[1] = {want};
        CHECK(notes_are(&si.checks, w, 1) && summary_warnings_are(out, &si.checks), "--span %s", spans[k]);
    }
    CHECK(si.n_bars == NBARS - sp.train.begin, "--span all holds %lld bars", (long long)si.n_bars);
    // the test span: out of sample, no warning
    snprintf(out, sizeof out, "%s/test", fx.dir);
    CHECK_OK(run(&fx, NULL, "test", out, 0, &si, 0, NULL));
    CHECK(si.checks.n_notes == 0, "test span: %d notes", si.checks.n_notes);
    fixture_free(&fx);
}

/* Every instrument.* key, data.price_side, metrics.risk_free_rate and her.eval_goal may be set
 * for a backtest (the risk-free rate reaches the annualisation); data.path and learn.* are
 * refused. */
static void test_overrides(void) {
    job_fixture fx;
    fixture_init_as(&fx, 46, 1);
    int n = 0;
    for (int i = 0; i < vp_config_key_count(); ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        const int want = strncmp(k->name, "instrument.", 11) == 0 || strcmp(k->name, "data.price_side") == 0 ||
                         strcmp(k->name, "metrics.risk_free_rate") == 0 || strcmp(k->name, "her.eval_goal") == 0;
        CHECK(vp_backtest_key_overridable(k->name) == want, "%s overridable: %d", k->name, !want);
        n += want;
    }
    CHECK(n == 13, "%d overridable keys (10 instrument.*, data.price_side, metrics.risk_free_rate, her.eval_goal)", n);
    char k1[] = "instrument.spread_ticks=2", k2[] = "instrument.financing_long=0.03",
         k3[] = "instrument.financing_short=0.01", k4[] = "instrument.max_leverage=30", k5[] = "data.price_side=bid",
         k6[] = "metrics.risk_free_rate=0.05";
    char* over[6] = {k1, k2, k3, k4, k5, k6};
    char out[400];
    snprintf(out, sizeof out, "%s/over", fx.dir);
    vp_backtest_job job = {fx.ck, NULL, NULL, NULL, out, 0, 1, 1, NULL, NULL, 6, over};
    vp_rollout_result r;
    char got[400];
    CHECK_OK(vp_backtest_job_run(fx.b, &job, &r, got, sizeof got));
    CHECK(r.summary.annual.risk_free_rate == 0.05, "risk-free rate %g", r.summary.annual.risk_free_rate);
    vp_rollout_result_free(&r);
    char path[600];
    snprintf(path, sizeof path, "%s/config.yaml", out);
    vp_config back;
    vp_config_defaults(&back);
    CHECK_OK(vp_config_load_file(&back, path));
    CHECK(back.instrument.spread_ticks == 2 && back.instrument.financing_long == 0.03 &&
              back.instrument.financing_short == 0.01 && back.instrument.max_leverage == 30 &&
              back.data.price_side == 1 && back.metrics.risk_free_rate == 0.05,
          "config.yaml does not hold the overrides");
    char bad1[] = "data.path=other.csv", bad2[] = "learn.lr=0.1";
    char* bad[2] = {bad1, bad2};
    for (int k = 0; k < 2; ++k) {
        snprintf(out, sizeof out, "%s/bad%d", fx.dir, k);
        vp_backtest_job refused = {fx.ck, NULL, NULL, NULL, out, 0, 1, 1, NULL, NULL, 1, &bad[k]};
        CHECK_STATUS(vp_backtest_job_run(fx.b, &refused, &r, got, sizeof got), VP_ERR_INVALID_ARG,
                     "a backtest may change only instrument.* keys, data.price_side, metrics.risk_free_rate and "
                     "her.eval_goal");
        vp_rollout_result_free(&r);
        CHECK(!vpt_exists(out, NULL), "a refused override made %s", out);
    }
    fixture_free(&fx);
}

int main(void) {
    RUN_TEST(test_interval);
    RUN_TEST(test_scale);
    RUN_TEST(test_leverage);
    RUN_TEST(test_identity);
    RUN_TEST(test_in_sample);
    RUN_TEST(test_overrides);
    return vpt_finish();
}
