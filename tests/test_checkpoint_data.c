/* Tests of the record of the training data in a checkpoint (vulpes.data.*): measured by hand
 * on six bars (interval, median of the training span, range of the closes, the absolute path),
 * written and read back bit for bit, an older checkpoint without one, every bad value refused
 * on opening naming its key, the record a training run writes (a synthetic market and a CSV
 * file: size and XXH64 of its bytes), and a resume on a changed file refused. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <unistd.h>

#include "data/hash.h"
#include "test_data_util.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/checkpoint.h"
#include "vulpes/data_record.h"

/* Six hourly bars, the fifth two hours after the fourth; closes 2 4 1 3 5 6. */
static void six_bars(vp_bars* b) {
    static const double close[6] = {2, 4, 1, 3, 5, 6};
    CHECK_OK(vp_bars_alloc(b, 6));
    const int64_t t0 = 1483228800000; /* 2017-01-01 */
    const int64_t hours[6] = {0, 1, 2, 3, 5, 6};
    for (int i = 0; i < 6; ++i) {
        b->time_ms[i] = t0 + hours[i] * 3600000;
        b->open[i] = b->high[i] = b->low[i] = b->close[i] = close[i];
    }
}

/* A record measured by hand: training span [1, 5) has closes 4 1 3 5, median 3.5; spacings
 * 1 1 1 2 1 hours, median 3600 s; closes range 1..6; a relative path made absolute. */
static void test_record_make(void) {
    vp_train_data d;
    memset(&d, 0, sizeof d);
    six_bars(&d.bars);
    snprintf(d.source, sizeof d.source, "no_such_dir/bars.csv");
    d.source_bytes = 100;
    d.source_hash = 0xabcULL;
    vp_data_record r;
    CHECK_OK(vp_data_record_make(&d, (vp_span){1, 5}, &r));
    char cwd[1024], want[1200];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    snprintf(want, sizeof want, "%s/no_such_dir/bars.csv", cwd);
    CHECK(r.kind == VP_DATA_FILE && strcmp(r.source, want) == 0 && r.bytes == 100 && r.hash == 0xabcULL,
          "identity: kind %d source %s bytes %lld", (int)r.kind, r.source, (long long)r.bytes);
    CHECK(r.n_bars == 6 && r.interval_s == 3600.0 && r.train_median_close == 3.5 && r.close_min == 1.0 &&
              r.close_max == 6.0,
          "bars %lld interval %g median %g range %g..%g", (long long)r.n_bars, r.interval_s, r.train_median_close,
          r.close_min, r.close_max);
    // an odd span's median is its middle close; an empty span is refused
    double m = 0;
    CHECK_OK(vp_bars_median_close(&d.bars, (vp_span){0, 3}, &m));
    CHECK(m == 2.0, "median of 2 4 1: %g", m);
    CHECK_STATUS(vp_bars_median_close(&d.bars, (vp_span){4, 4}, &m), VP_ERR_INVALID_ARG, "holds no bar");
    // a synthetic market by its spec, bars given in memory by a description
    snprintf(d.source, sizeof d.source, "synth:ou:bars=6");
    d.source_bytes = -1;
    CHECK_OK(vp_data_record_make(&d, (vp_span){0, 6}, &r));
    CHECK(r.kind == VP_DATA_SYNTHETIC && strcmp(r.source, "synth:ou:bars=6") == 0 && r.bytes == 0 && r.hash == 0 &&
              r.train_median_close == 3.5,
          "synthetic record: kind %d source %s median %g", (int)r.kind, r.source, r.train_median_close);
    snprintf(d.source, sizeof d.source, "(bars given)");
    CHECK_OK(vp_data_record_make(&d, (vp_span){0, 6}, &r));
    CHECK(r.kind == VP_DATA_GIVEN && !vp_data_record_same(&r, &r), "given bars are never known to be the same");
    vp_bars_free(&d.bars);
}

/* Spacings in words. */
static void test_interval_words(void) {
    static const struct {
        double s;
        const char* want;
    } cases[] = {{3600, "1 hour"},     {86400, "1 day"},      {900, "15 minutes"}, {9000, "2.5 hours"},
                 {604800, "1 week"},  {30, "30 seconds"},    {1, "1 second"},     {0.25, "250 milliseconds"},
                 {172800, "2 days"}, {1209600, "2 weeks"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char buf[64];
        CHECK(strcmp(vp_interval_words(cases[i].s, buf, sizeof buf), cases[i].want) == 0, "%g s: '%s', expected '%s'",
              cases[i].s, buf, cases[i].want);
    }
}

/* A file record of known values. */
static vp_data_record file_record(void) {
    vp_data_record r;
    memset(&r, 0, sizeof r);
    r.kind = VP_DATA_FILE;
    snprintf(r.source, sizeof r.source, "/data/eurusd_1h_2017.csv");
    r.bytes = 416442;
    r.hash = 0xe7051806f53882edULL;
    r.n_bars = 6225;
    r.interval_s = 3600;
    r.train_median_close = 1.1143;
    r.close_min = 1.03846;
    r.close_max = 1.20796;
    return r;
}

/* Writes a checkpoint of one tensor with meta[n] to path. */
static vp_status save_with(vp_backend* b, const char* path, const vp_ckpt_meta* meta, int n) {
    float x[2] = {1.0f, 2.0f};
    vp_ckpt_item it = {"w", vp_tensor_1d(x, VP_F32, VP_MEM_HOST, 2)};
    return vp_checkpoint_save(b, path, &it, 1, meta, n);
}

/* The record's pairs with key `key` given value `value` (NULL: left out) into out; returns n. */
static int edited(const vp_ckpt_data_meta* dm, const char* key, const char* value, vp_ckpt_meta* out) {
    int n = 0;
    for (int i = 0; i < dm->n; ++i) {
        if (strcmp(dm->pairs[i].key, key) != 0) out[n++] = dm->pairs[i];
        else if (value) out[n++] = (vp_ckpt_meta){key, value};
    }
    return n;
}

/* Written and read back: the pairs' text, every field bit for bit; an older file has none. */
static void test_round_trip(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    char dir[256], path[320];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    snprintf(path, sizeof path, "%s/ck.safetensors", dir);
    vp_data_record r = file_record(), back;
    vp_ckpt_data_meta dm;
    CHECK_OK(vp_checkpoint_data_meta(&r, &dm));
    CHECK(dm.n == 9, "%d pairs", dm.n);
    static const char* want[9][2] = {{"vulpes.data.kind", "file"},
                                     {"vulpes.data.source", "/data/eurusd_1h_2017.csv"},
                                     {"vulpes.data.bars", "6225"},
                                     {"vulpes.data.interval_s", "3600"},
                                     {"vulpes.data.train_median_close", "1.1143000000000001"},
                                     {"vulpes.data.close_min", "1.0384599999999999"},
                                     {"vulpes.data.close_max", "1.2079599999999999"},
                                     {"vulpes.data.bytes", "416442"},
                                     {"vulpes.data.xxh64", "xxh64:e7051806f53882ed"}};
    for (int i = 0; i < 9 && i < dm.n; ++i)
        CHECK(strcmp(dm.pairs[i].key, want[i][0]) == 0 && strcmp(dm.pairs[i].value, want[i][1]) == 0,
              "pair %d: %s = %s", i, dm.pairs[i].key, dm.pairs[i].value);
    CHECK_OK(save_with(b, path, dm.pairs, dm.n));
    vp_checkpoint* ck = NULL;
    int present = 0;
    CHECK_OK(vp_checkpoint_open(&ck, path));
    CHECK_OK(vp_checkpoint_data(ck, &back, &present));
    CHECK(present == 1 && memcmp(&back, &r, sizeof r) == 0, "the record read back differs");
    vp_checkpoint_close(ck);
    // a synthetic market: no size or hash
    vp_data_record s = r;
    s.kind = VP_DATA_SYNTHETIC;
    snprintf(s.source, sizeof s.source, "synth:trend:bars=1500,seed=3");
    s.bytes = 0, s.hash = 0;
    CHECK_OK(vp_checkpoint_data_meta(&s, &dm));
    CHECK(dm.n == 7, "%d pairs of a synthetic record", dm.n);
    CHECK_OK(save_with(b, path, dm.pairs, dm.n));
    CHECK_OK(vp_checkpoint_open(&ck, path));
    CHECK_OK(vp_checkpoint_data(ck, &back, &present));
    CHECK(present == 1 && memcmp(&back, &s, sizeof s) == 0, "the synthetic record read back differs");
    vp_checkpoint_close(ck);
    // an older checkpoint: no record, accepted
    vp_ckpt_meta old[1] = {{"format", "vulpes"}};
    CHECK_OK(save_with(b, path, old, 1));
    CHECK_OK(vp_checkpoint_open(&ck, path));
    back.n_bars = 99;
    CHECK_OK(vp_checkpoint_data(ck, &back, &present));
    CHECK(present == 0 && back.n_bars == 0 && back.source[0] == '\0', "an older checkpoint gave a record");
    vp_checkpoint_close(ck);
    // the writer refuses a bad record
    r.interval_s = NAN;
    CHECK_STATUS(vp_checkpoint_data_meta(&r, &dm), VP_ERR_PARSE, "bar interval nan s is not finite and > 0");
    tdu_rmtree(dir);
    vp_backend_free(b);
}

/* Every bad value, a missing key and a key that does not belong are refused on opening,
 * naming what is wrong. */
static void test_bad_values(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    char dir[256], path[320];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    snprintf(path, sizeof path, "%s/ck.safetensors", dir);
    vp_data_record r = file_record();
    vp_ckpt_data_meta dm;
    CHECK_OK(vp_checkpoint_data_meta(&r, &dm));
    static const struct {
        const char* key;
        const char* value; /* NULL: the key left out */
        const char* needle;
    } cases[] = {
        {"vulpes.data.kind", "folder", "'vulpes.data.kind' = 'folder' is not file, synthetic or given"},
        {"vulpes.data.kind", NULL, "'vulpes.data.kind' is missing"},
        {"vulpes.data.source", "", "the data's source is empty"},
        {"vulpes.data.source", "data/eurusd.csv", "'data/eurusd.csv' is not an absolute path"},
        {"vulpes.data.bars", "-5", "'vulpes.data.bars' = '-5' is not a whole number"},
        {"vulpes.data.bars", "2.5", "'vulpes.data.bars' = '2.5' is not a whole number"},
        {"vulpes.data.bars", " 7", "'vulpes.data.bars' = ' 7' is not a whole number"},
        {"vulpes.data.bars", "99999999999999999999", "is not a whole number"},
        {"vulpes.data.bars", "1", "1 bars, at least 2"},
        {"vulpes.data.interval_s", "nan", "'vulpes.data.interval_s' = 'nan' is not a number"},
        {"vulpes.data.interval_s", "inf", "'vulpes.data.interval_s' = 'inf' is not a number"},
        {"vulpes.data.interval_s", "1e400", "bar interval inf s is not finite and > 0"},
        {"vulpes.data.interval_s", "0", "bar interval 0 s is not finite and > 0"},
        {"vulpes.data.interval_s", "-3600", "bar interval -3600 s is not finite and > 0"},
        {"vulpes.data.interval_s", "3600s", "'vulpes.data.interval_s' = '3600s' is not a number"},
        {"vulpes.data.interval_s", NULL, "'vulpes.data.interval_s' is missing"},
        {"vulpes.data.train_median_close", "0", "must be finite and > 0"},
        {"vulpes.data.train_median_close", "5", "the training median close 5 lies outside the closes' range"},
        {"vulpes.data.close_min", "-1", "must be finite and > 0"},
        {"vulpes.data.close_max", "1.0", "lies outside the closes' range [1.03846, 1]"},
        {"vulpes.data.bytes", "0", "the data file's size is 0 bytes"},
        {"vulpes.data.bytes", "1k", "'vulpes.data.bytes' = '1k' is not a whole number"},
        {"vulpes.data.bytes", NULL, "'vulpes.data.bytes' is missing"},
        {"vulpes.data.xxh64", "xxh64:E7051806F53882ED", "is not xxh64:<16 lowercase hex digits>"},
        {"vulpes.data.xxh64", "md5:e7051806f53882ed", "is not xxh64:<16 lowercase hex digits>"},
        {"vulpes.data.xxh64", "xxh64:e7051806f5388", "is not xxh64:<16 lowercase hex digits>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        vp_ckpt_meta meta[VP_CKPT_DATA_KEYS];
        const int n = edited(&dm, cases[i].key, cases[i].value, meta);
        CHECK_OK(save_with(b, path, meta, n));
        vp_checkpoint* ck = NULL;
        CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, cases[i].needle);
        CHECK(ck == NULL, "case %zu opened", i);
        vp_checkpoint_close(ck);
    }
    // a synthetic record with a file's size
    vp_ckpt_meta meta[VP_CKPT_DATA_KEYS];
    int n = edited(&dm, "vulpes.data.kind", "synthetic", meta);
    CHECK_OK(save_with(b, path, meta, n));
    vp_checkpoint* ck = NULL;
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE,
                 "a synthetic data source has no 'vulpes.data.bytes' or 'vulpes.data.xxh64'");
    // one key of the record alone is a record missing the rest
    vp_ckpt_meta one[1] = {{"vulpes.data.bars", "10"}};
    CHECK_OK(save_with(b, path, one, 1));
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, "'vulpes.data.kind' is missing");
    tdu_rmtree(dir);
    vp_backend_free(b);
}

/* The record a training run writes into its checkpoints: the synthetic market's spec, then a
 * CSV file by its absolute path, size and XXH64; a resume on the file changed is refused. */
static void test_training_record(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 0, NULL)) return;
    char dir[256], csv[320], ck_path[320];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    setenv("VULPES_CACHE_DIR", dir, 1);
    snprintf(ck_path, sizeof ck_path, "%s/best.safetensors", dir);
    vp_train_data d;
    vp_trainer t;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_trainer_init(&t, b, &cfg, &d));
    CHECK_OK(vp_trainer_save(&t, ck_path, VP_CKPT_BEST));
    vp_checkpoint* ck = NULL;
    vp_data_record r;
    int present = 0;
    double median = 0;
    CHECK_OK(vp_bars_median_close(&d.bars, d.split.train, &median));
    CHECK_OK(vp_checkpoint_open(&ck, ck_path));
    CHECK_OK(vp_checkpoint_data(ck, &r, &present));
    CHECK(present && r.kind == VP_DATA_SYNTHETIC && strcmp(r.source, "synth:trend:bars=1500,seed=3") == 0 &&
              r.n_bars == 1500 && r.train_median_close == median && r.interval_s == 3600.0,
          "synthetic record: kind %d source %s bars %lld median %g (want %g) interval %g", (int)r.kind, r.source,
          (long long)r.n_bars, r.train_median_close, median, r.interval_s);
    vp_checkpoint_close(ck);

    // the same bars as a CSV file, read by a relative path: absolute path, size, hash
    snprintf(csv, sizeof csv, "%s/bars.csv", dir);
    CHECK_OK(vp_bars_save_csv(&d.bars, csv, -1));
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(chdir(dir) == 0, "chdir %s", dir);
    snprintf(cfg.data.path, sizeof cfg.data.path, "bars.csv");
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_trainer_init(&t, b, &cfg, &d));
    snprintf(ck_path, sizeof ck_path, "%s/last.safetensors", dir);
    CHECK_OK(vp_trainer_save(&t, ck_path, VP_CKPT_RESUME));
    size_t len = 0;
    char* bytes = vpt_read_file(csv, NULL, &len);
    char* real = realpath(csv, NULL);
    CHECK_OK(vp_checkpoint_open(&ck, ck_path));
    CHECK_OK(vp_checkpoint_data(ck, &r, &present));
    CHECK(present && r.kind == VP_DATA_FILE && real && strcmp(r.source, real) == 0 && r.bytes == (int64_t)len &&
              bytes && r.hash == vp_hash64(bytes, len, 0) && r.train_median_close == median,
          "file record: kind %d source %s bytes %lld (file %zu)", (int)r.kind, r.source, (long long)r.bytes, len);
    vp_checkpoint_close(ck);
    free(bytes);
    free(real);
    // the file changed (one close moved): a resume from the checkpoint refuses it
    vp_train_data_free(&d);
    vp_trainer_free(&t);
    CHECK(chdir(cwd) == 0, "chdir back");
    vp_bars bars;
    vp_load_opts lo = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(csv, &lo, &bars, NULL));
    bars.close[bars.n - 1] = bars.high[bars.n - 1];
    CHECK_OK(vp_bars_save_csv(&bars, csv, -1));
    vp_bars_free(&bars);
    snprintf(cfg.data.path, sizeof cfg.data.path, "%s", csv);
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_trainer_init(&t, b, &cfg, &d));
    CHECK_STATUS(vp_trainer_load(&t, ck_path), VP_ERR_INVALID_ARG, "a resume continues on the same bars");
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    tdu_rmtree(dir);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_record_make);
    RUN_TEST(test_interval_words);
    RUN_TEST(test_round_trip);
    RUN_TEST(test_bad_values);
    RUN_TEST(test_training_record);
    return vpt_finish();
}
