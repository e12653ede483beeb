/* The flat C API's search space (vulpes/api.h, the Optuna bridge's reader): a space given as
 * text and as a file read against a base config with overrides, each key described (name,
 * distribution, bounds, choices) as written; a trial's values accepted, and refused with the
 * trial named; every refusal of the space reader reaching the caller as a status and a message;
 * the describing calls' own refusals. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "vp_test.h"
#include "vulpes/api.h"

static const char* const OVER[] = {"data.path=synth:gbm:bars=3000,seed=5", "model.hidden=64"};

static const char* const TEXT = "learn.lr: {log_uniform: [1.0e-4, 3.0e-3]}\n"
                                "learn.gamma: {uniform: [0.9, 0.99]}\n"
                                "learn.n_step: {int: [1, 5]}\n"
                                "model.encoder: {choice: [none, tlob]}\n";

static void test_describe(void) {
    vp_api_space* s = NULL;
    CHECK(vp_api_space_open(NULL, OVER, 2, TEXT, 1, &s) == 0 && s != NULL, "open: %s", vp_api_last_error());
    if (!s) return;
    CHECK(vp_api_space_n_params(s) == 4, "%d keys", vp_api_space_n_params(s));
    const char* keys[4] = {"learn.lr", "learn.gamma", "learn.n_step", "model.encoder"};
    const int dists[4] = {1, 0, 2, 3};
    const double lo[4] = {1.0e-4, 0.9, 1, 0}, hi[4] = {3.0e-3, 0.99, 5, 0};
    for (int i = 0; i < 4; ++i) {
        char key[64];
        int dist = -1, nc = -1;
        double l = -1, h = -1;
        CHECK(vp_api_space_param(s, i, key, sizeof key, &dist, &l, &h, &nc) == 0, "param %d: %s", i,
              vp_api_last_error());
        CHECK(strcmp(key, keys[i]) == 0 && dist == dists[i] && l == lo[i] && h == hi[i] && nc == (i == 3 ? 2 : 0),
              "param %d: %s dist %d [%g, %g] %d choices", i, key, dist, l, h, nc);
    }
    CHECK(vp_api_space_choice(s, 3, 0) && strcmp(vp_api_space_choice(s, 3, 0), "none") == 0, "choice 0");
    CHECK(vp_api_space_choice(s, 3, 1) && strcmp(vp_api_space_choice(s, 3, 1), "tlob") == 0, "choice 1");
    CHECK(vp_api_space_choice(s, 3, 2) == NULL && vp_api_space_choice(s, 0, 0) == NULL &&
              vp_api_space_choice(s, 4, 0) == NULL && vp_api_space_choice(NULL, 3, 0) == NULL,
          "a choice out of range is NULL");
    // the describing calls' refusals
    char small[4];
    int d = 0, n = 0;
    double l = 0, h = 0;
    CHECK(vp_api_space_param(s, 4, small, 64, &d, &l, &h, &n) == VP_ERR_INVALID_ARG &&
              strstr(vp_api_last_error(), "key 4 of 4"), "key out of range: %s", vp_api_last_error());
    CHECK(vp_api_space_param(s, 0, small, sizeof small, &d, &l, &h, &n) == VP_ERR_INVALID_ARG &&
              strstr(vp_api_last_error(), "does not fit the 4 bytes"), "short buffer: %s", vp_api_last_error());
    // a trial's values: accepted; out of a key's range or too few, refused naming the trial
    const char* good[4] = {"0.001", "0.95", "3", "tlob"};
    CHECK(vp_api_space_check(s, good, 4, 0) == 0, "good values: %s", vp_api_last_error());
    const char* bad[4] = {"0.001", "1.5", "3", "tlob"};
    CHECK(vp_api_space_check(s, bad, 4, 9) == VP_ERR_INVALID_ARG &&
              strstr(vp_api_last_error(), "trial 9: learn.gamma: expected a number in [0, 1], got '1.5'"),
          "bad value: %s", vp_api_last_error());
    CHECK(vp_api_space_check(s, good, 3, 0) == VP_ERR_INVALID_ARG &&
              strstr(vp_api_last_error(), "3 values given for its 4 keys"), "too few: %s", vp_api_last_error());
    vp_api_space_close(s);
    vp_api_space_close(NULL);
    CHECK(vp_api_space_n_params(NULL) == 0, "no space: 0 keys");
}

static void test_file(void) {
    char path[] = "/tmp/vp_api_space_XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    const char* text = "model.hidden: {choice: [32, 64]}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
    close(fd);
    vp_api_space* s = NULL;
    CHECK(vp_api_space_open(NULL, OVER, 2, path, 0, &s) == 0 && vp_api_space_n_params(s) == 1, "file: %s",
          vp_api_last_error());
    CHECK(s && strcmp(vp_api_space_choice(s, 0, 1), "64") == 0, "the file's choice");
    vp_api_space_close(s);
    unlink(path);
}

/* Opening `text` (as text) fails with `status` and a message containing `needle`; *out stays NULL. */
static void check_refused(const char* text, int status, const char* needle) {
    vp_api_space* s = (vp_api_space*)1;
    const int got = vp_api_space_open(NULL, OVER, 2, text, 1, &s);
    CHECK(got == status && s == NULL && strstr(vp_api_last_error(), needle) != NULL,
          "'%s': %s \"%s\", expected %s mentioning \"%s\"", text, vp_api_status_name(got), vp_api_last_error(),
          vp_api_status_name(status), needle);
}

static void test_refusals(void) {
    check_refused("learn.lrr: {uniform: [0.1, 0.2]}\n", VP_ERR_INVALID_ARG,
                  "the search space:1: unknown key 'learn.lrr'; did you mean 'learn.lr'?");
    check_refused("learn.lr: {uniform: [0.1, 0.2]}\nrun.seed: {int: [1, 2]}\n", VP_ERR_INVALID_ARG,
                  "the search space:2: run.seed is not searchable");
    check_refused("learn.gamma: {uniform: [0.2, 0.1]}\n", VP_ERR_INVALID_ARG, "bounds must be ordered lo < hi");
    check_refused("learn.n_step: {uniform: [1, 3]}\n", VP_ERR_INVALID_ARG, "learn.n_step");
    vp_api_space* s = (vp_api_space*)1;
    CHECK(vp_api_space_open(NULL, OVER, 2, "/nonexistent/space.yaml", 0, &s) == VP_ERR_IO && s == NULL &&
              strstr(vp_api_last_error(), "cannot open search space /nonexistent/space.yaml"),
          "missing file: %s", vp_api_last_error());
    const char* bad_over[] = {"learn.nope=1"};
    CHECK(vp_api_space_open(NULL, bad_over, 1, TEXT, 1, &s) == VP_ERR_INVALID_ARG && s == NULL &&
              strstr(vp_api_last_error(), "learn.nope"), "bad override: %s", vp_api_last_error());
    CHECK(vp_api_space_open(NULL, OVER, 2, NULL, 1, &s) == VP_ERR_INVALID_ARG, "NULL space");
}

int main(void) {
    RUN_TEST(test_describe);
    RUN_TEST(test_file);
    RUN_TEST(test_refusals);
    return vpt_finish();
}
