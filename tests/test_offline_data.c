/* Tests of offline datasets (vulpes/offline.h): a hand-made dataset saved and loaded back bit
 * for bit with the metadata written as documented; tampered files each refused on loading
 * with a message naming the file and the field (truncated, a wrong dtype, a wrong shape, an
 * action out of its branch, a bar outside the span, logp > 0, done neither 0 nor 1, a tensor
 * or a key missing, a bad count); a dataset used against other data refused by
 * vp_offline_check_data; the checks of vp_offline_check on data in memory. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "io/safetensors.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/offline.h"

enum { T = 3, E = 2, P = VP_ENV_PORTFOLIO };

static char g_dir[512];

/* g_dir/name into out[n]. */
static const char* path_of(char* out, size_t n, const char* name) {
    snprintf(out, n, "%s/%s", g_dir, name);
    return out;
}

/* A dataset of 3 steps of 2 envs over bars [10, 40) of a 50-bar synthetic market: env 0
 * runs bars 10..13, env 1 bars 20, 21, ends its episode at step 1 and restarts at 30. */
static void make(vp_offline_data* d) {
    CHECK_OK(vp_offline_alloc(d, T, E, P));
    const int32_t bars[T + 1][E] = {{10, 20}, {11, 21}, {12, 30}, {13, 31}};
    for (int t = 0; t <= T; ++t)
        for (int i = 0; i < E; ++i) {
            d->bar[t * E + i] = bars[t][i];
            for (int j = 0; j < P; ++j) d->portfolio[(t * E + i) * P + j] = 0.125f * (float)(t - j) + (float)i;
        }
    for (int r = 0; r < T * E; ++r) {
        for (int br = 0; br < VP_ENV_BRANCHES; ++br) d->action[r * VP_ENV_BRANCHES + br] = (r + br) % 3;
        d->reward[r] = -0.001f * (float)r + 1e-7f;
        d->logp[r] = r == 2 ? NAN : -0.5f * (float)r;
    }
    d->done[1 * E + 1] = 1.0f;
    d->span = (vp_span){10, 40};
    d->seed = 18446744073709551615ULL;
    snprintf(d->behaviour, sizeof d->behaviour, "ma_cross:fast=5,slow=20,epsilon=0.1");
    d->data.kind = VP_DATA_SYNTHETIC;
    snprintf(d->data.source, sizeof d->data.source, "synth:ou:bars=50,seed=3");
    d->data.n_bars = 50;
    d->data.interval_s = 3600.0;
    d->data.train_median_close = 100.25;
    d->data.close_min = 90.5;
    d->data.close_max = 111.0;
}

/* Whether two datasets hold the same bits in every field. */
static int same(const vp_offline_data* a, const vp_offline_data* b) {
    const size_t obs = (size_t)((a->steps + 1) * a->n_envs), rows = (size_t)(a->steps * a->n_envs);
    return a->steps == b->steps && a->n_envs == b->n_envs && a->n_portfolio == b->n_portfolio &&
           memcmp(a->bar, b->bar, obs * 4) == 0 && memcmp(a->portfolio, b->portfolio, obs * (size_t)P * 4) == 0 &&
           memcmp(a->action, b->action, rows * 16) == 0 && memcmp(a->reward, b->reward, rows * 4) == 0 &&
           memcmp(a->done, b->done, rows * 4) == 0 && memcmp(a->logp, b->logp, rows * 4) == 0 &&
           a->span.begin == b->span.begin && a->span.end == b->span.end && a->seed == b->seed &&
           strcmp(a->behaviour, b->behaviour) == 0 && a->data.kind == b->data.kind &&
           strcmp(a->data.source, b->data.source) == 0 && a->data.n_bars == b->data.n_bars &&
           a->data.interval_s == b->data.interval_s && a->data.train_median_close == b->data.train_median_close &&
           a->data.close_min == b->data.close_min && a->data.close_max == b->data.close_max;
}

/* Saved and loaded back: every bit equal, NaN logp included; the metadata as documented. */
static void test_round_trip(void) {
    vp_offline_data d, r;
    make(&d);
    char p[600], tmp[700];
    CHECK_OK(vp_offline_save(&d, path_of(p, sizeof p, "good.safetensors")));
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    CHECK(access(tmp, F_OK) != 0, "the temporary file %s was left behind", tmp);
    CHECK_OK(vp_offline_load(p, &r));
    CHECK(same(&d, &r), "the loaded dataset differs from the saved one");
    CHECK(isnan(r.logp[2]) && r.logp[5] == -2.5f, "logp %g %g", (double)r.logp[2], (double)r.logp[5]);
    vp_st_file f;
    CHECK_OK(vp_st_load(&f, p));
    const char* want[][2] = {{"vulpes.offline.format", "1"},
                             {"vulpes.offline.steps", "3"},
                             {"vulpes.offline.envs", "2"},
                             {"vulpes.offline.portfolio", "8"},
                             {"vulpes.offline.span_begin", "10"},
                             {"vulpes.offline.span_end", "40"},
                             {"vulpes.offline.seed", "18446744073709551615"},
                             {"vulpes.offline.behaviour", "ma_cross:fast=5,slow=20,epsilon=0.1"},
                             {"vulpes.data.kind", "synthetic"},
                             {"vulpes.data.source", "synth:ou:bars=50,seed=3"},
                             {"vulpes.data.bars", "50"}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; ++k) {
        const char* v = vp_st_meta(&f, want[k][0]);
        CHECK(v && strcmp(v, want[k][1]) == 0, "metadata %s = %s, expected %s", want[k][0], v ? v : "(none)",
              want[k][1]);
    }
    const vp_st_entry* e = vp_st_find(&f, "portfolio");
    CHECK(f.n_entries == 6 && e && e->ndim == 3 && e->shape[0] == T + 1 && e->shape[1] == E && e->shape[2] == P,
          "%d tensors; portfolio's shape", f.n_entries);
    vp_st_free(&f);
    vp_offline_free(&r);
    vp_offline_free(&d);
}

/* What a tampered copy changes: one tensor replaced (dtype, shape, data), or one metadata
 * value replaced (value NULL: the key dropped). */
typedef struct edit {
    const char* tensor;
    vp_dtype dtype;
    int ndim;
    int64_t shape[3];
    const void* data;
    const char* key;
    const char* value;
} edit;

/* Copies the safetensors file src to dst with edit x applied. */
static void rewrite(const char* src, const char* dst, const edit* x) {
    vp_st_file f;
    CHECK_OK(vp_st_load(&f, src));
    vp_st_writer w;
    vp_st_writer_init(&w);
    for (int i = 0; i < f.n_meta; ++i) {
        const int hit = x->key && strcmp(f.meta_keys[i], x->key) == 0;
        if (hit && !x->value) continue;
        CHECK_OK(vp_st_writer_meta(&w, f.meta_keys[i], hit ? x->value : f.meta_values[i]));
    }
    for (int i = 0; i < f.n_entries; ++i) {
        const vp_st_entry* e = &f.entries[i];
        if (x->tensor && strcmp(e->name, x->tensor) == 0) {
            if (x->data) CHECK_OK(vp_st_writer_add(&w, e->name, x->dtype, x->ndim, x->shape, x->data));
        } else {
            CHECK_OK(vp_st_writer_add(&w, e->name, e->dtype, e->ndim, e->shape, vp_st_data(&f, e)));
        }
    }
    CHECK_OK(vp_st_writer_save(&w, dst));
    vp_st_writer_free(&w);
    vp_st_free(&f);
}

/* Every tampered copy is refused with the expected status and message, naming the file. */
static void test_tampered(void) {
    vp_offline_data d;
    make(&d);
    char good[600], bad[600];
    CHECK_OK(vp_offline_save(&d, path_of(good, sizeof good, "good.safetensors")));
    path_of(bad, sizeof bad, "bad.safetensors");
    // copies of arrays with one value changed
    int32_t action[T * E * 4], bar[(T + 1) * E];
    float logp[T * E], done[T * E], reward_i[T * E];
    int32_t done_i[T * E];
    memcpy(action, d.action, sizeof action);
    action[3 * 4 + 1] = 4;
    memcpy(bar, d.bar, sizeof bar);
    bar[0] = 9;
    memcpy(logp, d.logp, sizeof logp);
    logp[4] = 0.25f;
    memcpy(done, d.done, sizeof done);
    done[0] = 0.5f;
    for (int r = 0; r < T * E; ++r) done_i[r] = (int32_t)d.done[r];
    memcpy(reward_i, d.reward, sizeof reward_i);
    struct {
        edit x;
        vp_status status;
        const char* needle;
    } cases[] = {
        {{"done", VP_I32, 2, {T, E}, done_i, NULL, NULL}, VP_ERR_PARSE, "tensor 'done' is i32, expected f32"},
        {{"reward", VP_F32, 2, {E, T}, reward_i, NULL, NULL}, VP_ERR_SHAPE,
         "tensor 'reward' has shape [2, 3], expected [3, 2] from the metadata"},
        {{"reward", VP_F32, 1, {T * E}, reward_i, NULL, NULL}, VP_ERR_SHAPE, "tensor 'reward' has shape [6]"},
        {{"action", VP_I32, 3, {T, E, 4}, action, NULL, NULL}, VP_ERR_PARSE,
         "action of row 1, env 1, branch 1 is 4, outside 0..3"},
        {{"bar", VP_I32, 2, {T + 1, E}, bar, NULL, NULL}, VP_ERR_PARSE,
         "bar of row 0, env 0 is 9, outside the span [10, 40)"},
        {{"logp", VP_F32, 2, {T, E}, logp, NULL, NULL}, VP_ERR_PARSE, "logp of row 2, env 0 is 0.25"},
        {{"done", VP_F32, 2, {T, E}, done, NULL, NULL}, VP_ERR_PARSE, "done of row 0, env 0 is 0.5, not 0 or 1"},
        {{"logp", 0, 0, {0}, NULL, NULL, NULL}, VP_ERR_PARSE, "tensor 'logp' is missing"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.steps", "4"}, VP_ERR_SHAPE,
         "tensor 'bar' has shape [4, 2], expected [5, 2] from the metadata"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.envs", "0"}, VP_ERR_PARSE,
         "metadata 'vulpes.offline.envs' = 0 is outside 1.."},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.portfolio", "8x"}, VP_ERR_PARSE,
         "metadata 'vulpes.offline.portfolio' = '8x' is not a whole number"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.span_end", "60"}, VP_ERR_PARSE,
         "span [10, 60) is not a non-empty span of the data's 50 bars"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.span_begin", "12"}, VP_ERR_PARSE,
         "bar of row 0, env 0 is 10, outside the span [12, 40)"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.seed", "-1"}, VP_ERR_PARSE,
         "metadata 'vulpes.offline.seed' = '-1' is not a whole number below 2^64"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.behaviour", NULL}, VP_ERR_PARSE,
         "metadata 'vulpes.offline.behaviour' is missing"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.offline.format", "2"}, VP_ERR_PARSE,
         "metadata 'vulpes.offline.format' = '2', this build reads 1"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.data.bars", "-5"}, VP_ERR_PARSE,
         "metadata 'vulpes.data.bars' = '-5' is not a whole number"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.data.close_min", "200"}, VP_ERR_PARSE, "the record of the training data"},
        {{NULL, 0, 0, {0}, NULL, "vulpes.data.kind", NULL}, VP_ERR_PARSE,
         "metadata 'vulpes.data.kind' is missing from the record of the training data"},
    };
    char label[700];
    snprintf(label, sizeof label, "dataset %s: ", bad);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        rewrite(good, bad, &cases[k].x);
        vp_offline_data r;
        CHECK_STATUS(vp_offline_load(bad, &r), cases[k].status, cases[k].needle);
        CHECK(strstr(vp_last_error(), label) != NULL, "case %zu: the message does not name the file: %s", k,
              vp_last_error());
        CHECK(r.bar == NULL && r.steps == 0, "case %zu: a refused load left a dataset", k);
    }
    // an unknown tensor beside the six
    {
        vp_st_file f;
        CHECK_OK(vp_st_load(&f, good));
        vp_st_writer w;
        vp_st_writer_init(&w);
        for (int i = 0; i < f.n_meta; ++i) CHECK_OK(vp_st_writer_meta(&w, f.meta_keys[i], f.meta_values[i]));
        for (int i = 0; i < f.n_entries; ++i)
            CHECK_OK(vp_st_writer_add(&w, f.entries[i].name, f.entries[i].dtype, f.entries[i].ndim,
                                      f.entries[i].shape, vp_st_data(&f, &f.entries[i])));
        const int64_t one = 1;
        CHECK_OK(vp_st_writer_add(&w, "extra", VP_F32, 1, &one, d.reward));
        CHECK_OK(vp_st_writer_save(&w, bad));
        vp_st_writer_free(&w);
        vp_st_free(&f);
        vp_offline_data r;
        CHECK_STATUS(vp_offline_load(bad, &r), VP_ERR_PARSE, "7 tensors, a dataset has 6");
    }
    // truncated: the last bytes of the data gone
    {
        size_t len = 0;
        char* bytes = vpt_read_file(good, NULL, &len);
        FILE* fp = fopen(bad, "wb");
        CHECK(bytes && fp, "copy %s", good);
        if (bytes && fp) fwrite(bytes, 1, len - 5, fp);
        if (fp) fclose(fp);
        free(bytes);
        vp_offline_data r;
        CHECK_STATUS(vp_offline_load(bad, &r), VP_ERR_PARSE, bad);
        CHECK(strstr(vp_last_error(), "logp") != NULL, "a truncated file's message names the last tensor: %s",
              vp_last_error());
    }
    // missing file
    {
        vp_offline_data r;
        char none[600];
        vp_status s = vp_offline_load(path_of(none, sizeof none, "none.safetensors"), &r);
        CHECK(s == VP_ERR_IO && strstr(vp_last_error(), none) != NULL, "missing file: %s", vp_last_error());
    }
    remove(bad);
    vp_offline_free(&d);
}

/* The data a dataset was recorded on: the same synthetic spec passes, another spec, another
 * bar count, a file or a span past the bars is refused naming both sources. */
static void test_check_data(void) {
    vp_offline_data d;
    make(&d);
    vp_train_data t;
    memset(&t, 0, sizeof t);
    CHECK_OK(vp_bars_alloc(&t.bars, 50));
    snprintf(t.source, sizeof t.source, "synth:ou:bars=50,seed=3");
    t.source_bytes = -1;
    CHECK_OK(vp_offline_check_data(&d, &t, "dataset x"));
    snprintf(t.source, sizeof t.source, "synth:ou:bars=50,seed=4");
    CHECK_STATUS(vp_offline_check_data(&d, &t, "dataset x"), VP_ERR_INVALID_ARG,
                 "dataset x: recorded on synth:ou:bars=50,seed=3 (50 bars), not on these bars, "
                 "synth:ou:bars=50,seed=4 (50 bars)");
    snprintf(t.source, sizeof t.source, "/data/bars.csv");
    t.source_bytes = 1000;
    t.source_hash = 0x1234;
    CHECK_STATUS(vp_offline_check_data(&d, &t, "dataset x"), VP_ERR_INVALID_ARG,
                 "not on these bars, /data/bars.csv (1000 bytes, xxh64:0000000000001234)");
    // the same file wherever it lies, but the span past its bars
    d.data.kind = VP_DATA_FILE;
    snprintf(d.data.source, sizeof d.data.source, "/elsewhere/bars.csv");
    d.data.bytes = 1000;
    d.data.hash = 0x1234;
    CHECK_OK(vp_offline_check_data(&d, &t, "dataset x"));
    d.data.hash = 0x1235;
    CHECK_STATUS(vp_offline_check_data(&d, &t, "dataset x"), VP_ERR_INVALID_ARG, "xxh64:0000000000001235");
    d.data.hash = 0x1234;
    vp_bars_free(&t.bars);
    CHECK_OK(vp_bars_alloc(&t.bars, 45));
    CHECK_STATUS(vp_offline_check_data(&d, &t, "dataset x"), VP_ERR_INVALID_ARG, "(50 bars), not on these bars");
    vp_bars_free(&t.bars);
    vp_offline_free(&d);
}

/* vp_offline_check on data in memory, and a save that is refused writes nothing. */
static void test_check_memory(void) {
    vp_offline_data d;
    make(&d);
    CHECK_OK(vp_offline_check(&d, "here"));
    d.bar[2 * E + 0] = 13; /* env 0: 11 then 13 in an episode that went on */
    CHECK_STATUS(vp_offline_check(&d, "here"), VP_ERR_PARSE,
                 "here: bar of row 2, env 0 is 13 after bar 11 in an episode that went on");
    d.bar[2 * E + 0] = 12;
    d.portfolio[5] = INFINITY;
    CHECK_STATUS(vp_offline_check(&d, "here"), VP_ERR_PARSE, "portfolio of row 0, env 0, column 5 is not finite");
    d.portfolio[5] = 0.0f;
    d.reward[1] = NAN;
    CHECK_STATUS(vp_offline_check(&d, "here"), VP_ERR_PARSE, "reward of row 0, env 1 is not finite");
    d.reward[1] = 0.0f;
    d.logp[0] = -INFINITY;
    CHECK_STATUS(vp_offline_check(&d, "here"), VP_ERR_PARSE, "logp of row 0, env 0 is -inf");
    d.logp[0] = 0.0f;
    d.behaviour[0] = '\0';
    char p[600];
    CHECK_STATUS(vp_offline_save(&d, path_of(p, sizeof p, "refused.safetensors")), VP_ERR_PARSE,
                 "behaviour is empty");
    CHECK(access(p, F_OK) != 0, "a refused save wrote %s", p);
    vp_offline_free(&d);
    vp_offline_free(&d); /* a zeroed one is a no-op */
    CHECK_STATUS(vp_offline_alloc(&d, 0, 2, 8), VP_ERR_INVALID_ARG, "steps 0");
    CHECK_STATUS(vp_offline_alloc(&d, (int64_t)1 << 30, (int64_t)1 << 20, 8), VP_ERR_INVALID_ARG, "elements");
}

int main(void) {
    vpt_tmp_dir(g_dir, sizeof g_dir, "offline");
    vpt_rm_run(g_dir);
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "cannot create %s\n", g_dir);
        return 1;
    }
    RUN_TEST(test_round_trip);
    RUN_TEST(test_tampered);
    RUN_TEST(test_check_data);
    RUN_TEST(test_check_memory);
    vpt_rm_run(g_dir);
    return vpt_finish();
}
