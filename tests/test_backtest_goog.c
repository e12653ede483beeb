/* The case that made the data checks: a tiny network trained on 1500 EUR/USD hourly bars
 * (examples/data/eurusd_1h_2017.csv, price about 1.1, a lot of 100000 a point) and backtested on
 * daily GOOGL bars (examples/data/googl_1d_2009_2018.csv, price 200 to 1200). The training ran
 * in its data's folder with a relative data.path; its checkpoint records the file by its absolute
 * path, so a backtest from another working directory finds and names it. On GOOGL the backtest
 * is refused, naming the price scale, the bar interval and --force, and leaves no folder; with
 * --force it runs and summary.json's "warnings" hold the interval, scale and leverage warnings
 * and the other-file notice. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "test_data_util.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"

#define EURUSD "examples/data/eurusd_1h_2017.csv"
#define GOOGL "examples/data/googl_1d_2009_2018.csv"

/* Whether one of summary.json's warnings at out starts with `head` and holds `part` (NULL: any). */
static int has_warning(const char* out, const char* head, const char* part) {
    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", out);
    char* text = vpt_slurp(path, NULL);
    cJSON* root = text ? cJSON_Parse(text) : NULL;
    const cJSON* w = root ? cJSON_GetObjectItemCaseSensitive(root, "warnings") : NULL;
    int found = 0;
    for (int i = 0; cJSON_IsArray(w) && i < cJSON_GetArraySize(w) && !found; ++i) {
        const cJSON* e = cJSON_GetArrayItem(w, i);
        found = cJSON_IsString(e) && strncmp(e->valuestring, head, strlen(head)) == 0 &&
                (!part || strstr(e->valuestring, part) != NULL);
    }
    cJSON_Delete(root);
    free(text);
    return found;
}

static void test_googl(void) {
    char root[1024], dir[256], slice[400], ck[400], other[400], out[400], googl[1100];
    CHECK(getcwd(root, sizeof root) != NULL, "getcwd");
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    setenv("VULPES_CACHE_DIR", dir, 1);
    snprintf(googl, sizeof googl, "%s/" GOOGL, root);
    // 1500 hourly bars of EUR/USD in the run's folder
    vp_bars bars;
    vp_load_opts lo = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(EURUSD, &lo, &bars, NULL));
    const int64_t n_all = bars.n;
    bars.n = 1500;
    snprintf(slice, sizeof slice, "%s/eurusd_slice.csv", dir);
    CHECK_OK(vp_bars_save_csv(&bars, slice, -1));
    bars.n = n_all;
    vp_bars_free(&bars);

    // a tiny training run from that folder, data.path relative, the quickstart's instrument
    const char* over[] = {"data.path=eurusd_slice.csv",     "instrument.tick_size=0.00001",
                          "instrument.multiplier=100000",   "instrument.commission=3.5",
                          "instrument.slippage_ticks=5",    "instrument.max_position=1",
                          "instrument.initial_equity=100000", "train.iterations=6",
                          "train.eval_every=3",             "train.checkpoint_every=0"};
    vp_config cfg;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    CHECK(vpt_train_cfg(&cfg, (int)(sizeof over / sizeof over[0]), over), "config");
    CHECK(chdir(dir) == 0, "chdir %s", dir);
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = "run";
    vp_train_result tr;
    CHECK_OK(vp_train_run(&cfg, b, &o, &tr));
    snprintf(ck, sizeof ck, "%s/run/best.safetensors", dir);
    CHECK(vpt_exists(ck, NULL), "no %s", ck);

    // from another working directory: the recorded absolute path, said to be the one used
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    CHECK(mkdir(other, 0755) == 0 && chdir(other) == 0, "chdir %s", other);
    vp_backtest_span_info si;
    vp_rollout_result r;
    char got[600];
    snprintf(out, sizeof out, "%s/bt_default", dir);
    vp_backtest_job job = {ck, NULL, NULL, NULL, out, 0, 1, 1, NULL, &si, 0, NULL};
    CHECK_OK(vp_backtest_job_run(b, &job, &r, got, sizeof got));
    char* real = realpath(slice, NULL);
    CHECK(real && strcmp(si.checks.data, real) == 0 && si.checks.from_record && si.checks.n_notes == 0 &&
              si.overlap_known,
          "default data %s (want %s), %d notes", si.checks.data, real ? real : "?", si.checks.n_notes);
    free(real);
    vp_rollout_result_free(&r);

    // GOOGL daily: refused without --force, naming scale, interval and --force; no folder
    snprintf(out, sizeof out, "%s/bt_googl", dir);
    job.data = googl;
    job.out = out;
    CHECK_STATUS(vp_backtest_job_run(b, &job, &r, got, sizeof got), VP_ERR_INVALID_ARG, "refused: the prices are ");
    const char* msg = vp_last_error();
    CHECK(strstr(msg, "x the training's (median close ") && strstr(msg, "; and bars 1 day apart, trained on 1 hour") &&
              strstr(msg, "give --force to run it anyway"),
          "refusal: %s", msg);
    vp_rollout_result_free(&r);
    CHECK(si.checks.refused && !vpt_exists(out, NULL), "a refused backtest made %s", out);

    // with --force: it runs, and summary.json says what does not fit
    job.force = 1;
    CHECK_OK(vp_backtest_job_run(b, &job, &r, got, sizeof got));
    vp_rollout_result_free(&r);
    CHECK(has_warning(out, "notice: the data ", "googl_1d_2009_2018.csv is not the training data "),
          "no other-file notice");
    CHECK(has_warning(out, "WARNING: the bars are 1 day apart, the network was trained on bars 1 hour apart", NULL),
          "no interval warning");
    CHECK(has_warning(out, "WARNING: the prices are ", "; run anyway (--force)"), "no scale warning");
    CHECK(has_warning(out, "WARNING: at full size (instrument.max_position 1) the first bar's position is worth ",
                      "instrument.max_leverage 20 allows 2000000, so orders will be cut to the limit"),
          "no leverage warning");
    CHECK(chdir(root) == 0, "chdir back");
    vp_backend_free(b);
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_googl);
    return vpt_finish();
}
