/* Tests of refused and failed training runs: a refused resume of a finished run (a changed
 * config key, no iterations left, the folder in use, a damaged metrics.jsonl) leaves every
 * file byte for byte as it was; scales no float or double can carry (prices near 1e307 or
 * 1e300, instrument.multiplier 1e300, initial_equity 1e-300, env.reward_scale 1e300) are
 * refused before the folder is made; a run whose every learner step is non-finite fails. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"
#include "vulpes/run.h"

/* Runs the test config (plus overrides) in dir with the given mode, the test span's files
 * written at the end as `vulpes train` does. */
static vp_status run(const char* dir, vp_run_mode mode, int n, const char* const* over, vp_train_result* r) {
    return vpt_train_run(dir, mode, 0, vp_backtest_train_finish, n, over, r);
}

/* Every entry of dir, sorted by name, with its bytes: "name\n<size>\n<bytes>" each. Free it. */
static char* snapshot(const char* dir, size_t* len) {
    struct dirent** names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t cap = 1 << 20, used = 0;
    char* out = (char*)malloc(cap);
    for (int i = 0; i < n; ++i) {
        size_t sz = 0;
        char* body = names[i]->d_name[0] == '.' ? NULL : vpt_read_file(dir, names[i]->d_name, &sz);
        if (names[i]->d_name[0] != '.' || strcmp(names[i]->d_name, ".lock") == 0) {
            while (out && used + sz + 600 > cap) out = (char*)realloc(out, cap *= 2);
            if (out) {
                used += (size_t)snprintf(out + used, 600, "%s\n%zu\n", names[i]->d_name, sz);
                if (body) memcpy(out + used, body, sz), used += sz;
            }
        }
        free(body);
        free(names[i]);
    }
    free(names);
    *len = used;
    return out;
}

/* Whether dir's entries and bytes are those of the snapshot `s`. */
static int unchanged(const char* dir, const char* s, size_t len) {
    size_t n = 0;
    char* now = snapshot(dir, &n);
    int same = now && n == len && memcmp(now, s, len) == 0;
    free(now);
    return same;
}

static void test_refused_resume_changes_nothing(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "refused");
    vpt_rm_run(dir);
    vp_train_result r;
    const char* short_run[] = {"train.iterations=10", "train.eval_every=5"};
    CHECK_OK(run(dir, VP_RUN_CREATE, 2, short_run, &r));
    CHECK(vpt_exists(dir, "trades.csv") && vpt_exists(dir, "report.html"), "the finished run has no test-span files");
    size_t len = 0;
    char* before = snapshot(dir, &len);
    // a changed config key
    const char* lr[] = {"train.iterations=12", "train.eval_every=5", "learn.lr=0.002"};
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 3, lr, &r), VP_ERR_INVALID_ARG, "learn.lr");
    CHECK(unchanged(dir, before, len), "a resume refused for learn.lr changed the folder");
    // no iterations left
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 2, short_run, &r), VP_ERR_INVALID_ARG, "raise train.iterations");
    CHECK(unchanged(dir, before, len), "a resume refused for train.iterations changed the folder");
    // the folder in use by another command
    vp_run holder;
    CHECK_OK(vp_run_claim(&holder, dir, VP_RUN_RESUME));
    const char* longer[] = {"train.iterations=12", "train.eval_every=5"};
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 2, longer, &r), VP_ERR_STATE, "is in use by another vulpes process");
    vp_run_close(&holder);
    CHECK(unchanged(dir, before, len), "a resume refused for the lock changed the folder");
    // a damaged metrics.jsonl (a NUL byte in its second line)
    char p[600];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    FILE* f = fopen(p, "r+b");
    char* text = vpt_read_file(dir, "metrics.jsonl", NULL);
    const char* second = text ? strchr(text, '\n') : NULL;
    if (f && second) {
        fseek(f, (long)(second - text) + 3, SEEK_SET);
        fputc('\0', f);
    }
    if (f) fclose(f);
    free(text);
    free(before);
    before = snapshot(dir, &len);
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 2, longer, &r), VP_ERR_PARSE, "metrics.jsonl line 2");
    CHECK(unchanged(dir, before, len), "a resume refused for metrics.jsonl changed the folder");
    free(before);
    static const char* more[] = {"trades.csv", "equity.csv", "report.html"};
    for (size_t i = 0; i < 3; ++i) {
        snprintf(p, sizeof p, "%s/%s", dir, more[i]);
        remove(p);
    }
    vpt_rm_run(dir);
}

static void test_unusable_scales(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "scales");
    vpt_rm_run(dir);
    vp_train_result r;
    const struct {
        const char* over;
        const char* needle;
    } cases[] = {
        {"instrument.multiplier=1e300", "instrument.multiplier"},
        {"instrument.initial_equity=1e-300", "instrument.initial_equity"},
        {"env.reward_scale=1e300", "env.reward_scale"},
        {"data.path=synth:trend:bars=1500,seed=3,price=1e300", "price"},
        {"data.path=synth:trend:bars=1500,seed=3,price=1e307", "price"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const char* over[] = {cases[i].over};
        CHECK_STATUS(run(dir, VP_RUN_CREATE, 1, over, &r), VP_ERR_INVALID_ARG, cases[i].needle);
        CHECK(!vpt_exists(dir, NULL), "a refused run (%s) made its folder", cases[i].over);
        vpt_rm_run(dir);
    }
}

static void test_all_nan_run_fails(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "allnan");
    vpt_rm_run(dir);
    vp_train_result r;
    // a learning rate that blows the parameters up at the first step: every later step is NaN
    const char* over[] = {"learn.lr=1e30", "train.checkpoint_every=5"};
    CHECK_STATUS(run(dir, VP_RUN_CREATE, 2, over, &r), VP_ERR_NUMERIC, "non-finite");
    CHECK(!vpt_exists(dir, "summary.json") && !vpt_exists(dir, "trades.csv"), "a failed run wrote a summary");
    CHECK(vpt_exists(dir, "last.safetensors"), "the failed run's checkpoint is not kept");
    CHECK(r.count.iteration < 40, "the failed run went on to iteration %lld", (long long)r.count.iteration);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_refused_resume_changes_nothing);
    RUN_TEST(test_unusable_scales);
    RUN_TEST(test_all_nan_run_fails);
    return vpt_finish();
}
