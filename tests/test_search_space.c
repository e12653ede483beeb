/* The search space of vulpes search: a space read in both forms (dotted keys, keys nested
 * under their section) with every field checked; every refusal with its message (file, line
 * and key); the canonical YAML reading back to the same space; the draws: the unit number
 * from the Philox words by hand, deterministic for a seed, the same for a trial whatever the
 * other keys of the space, different under another seed; the laws over many draws (a
 * log-uniform's log uniform: mean and bounds; an int's both ends and every value between; a
 * choice's every value); a trial's values set into its config, and a draw the config refuses
 * named by trial. */
#include "vp_test.h"
#include "vulpes/search.h"

static const char* GOOD =
    "# a comment\n"
    "learn.lr: {log_uniform: [1e-5, 1e-2]}\n"
    "learn.gamma: {uniform: [0.9, 0.999]}\n"
    "model:\n"
    "  hidden: {choice: [32, 64, 128]}\n"
    "  encoder: {choice: [mamba2, none]}\n"
    "learn.n_step:\n"
    "  int: [1, 5]\n";

static void test_parse(void) {
    vp_config base;
    vp_config_defaults(&base);
    vp_search_space s;
    CHECK_OK(vp_search_space_parse(GOOD, "space.yaml", &base, &s));
    CHECK(s.n_params == 5, "%d keys, expected 5", s.n_params);
    const char* names[5] = {"learn.lr", "learn.gamma", "model.hidden", "model.encoder", "learn.n_step"};
    const vp_search_dist dist[5] = {VP_SEARCH_LOG_UNIFORM, VP_SEARCH_UNIFORM, VP_SEARCH_CHOICE, VP_SEARCH_CHOICE,
                                    VP_SEARCH_INT};
    const int lines[5] = {2, 3, 5, 6, 7};
    for (int i = 0; i < 5 && i < s.n_params; ++i) {
        CHECK(strcmp(s.params[i].key->name, names[i]) == 0, "key %d is %s, expected %s", i, s.params[i].key->name,
              names[i]);
        CHECK(s.params[i].dist == dist[i], "key %d: distribution %d, expected %d", i, s.params[i].dist, dist[i]);
        CHECK(s.params[i].line == lines[i], "key %d: line %d, expected %d", i, s.params[i].line, lines[i]);
        CHECK(vp_config_key_at(s.params[i].key_index) == s.params[i].key, "key %d: its table index", i);
    }
    CHECK(s.params[0].lo == 1e-5 && s.params[0].hi == 1e-2, "lr bounds [%g, %g]", s.params[0].lo, s.params[0].hi);
    CHECK(s.params[1].lo == 0.9 && s.params[1].hi == 0.999, "gamma bounds [%g, %g]", s.params[1].lo, s.params[1].hi);
    CHECK(s.params[4].lo == 1 && s.params[4].hi == 5, "n_step bounds [%g, %g]", s.params[4].lo, s.params[4].hi);
    CHECK(s.params[2].n_choices == 3 && strcmp(s.params[2].choices[0], "32") == 0 &&
              strcmp(s.params[2].choices[2], "128") == 0, "hidden's choices");
    CHECK(s.params[3].n_choices == 2 && strcmp(s.params[3].choices[1], "none") == 0, "encoder's choices");
    // the canonical text reads back to the same space, and writes the same text again
    char *y1 = NULL, *y2 = NULL;
    CHECK_OK(vp_search_space_to_yaml(&s, &y1));
    vp_search_space t;
    CHECK_OK(vp_search_space_parse(y1 ? y1 : "", "canonical", &base, &t));
    CHECK_OK(vp_search_space_to_yaml(&t, &y2));
    CHECK(y1 && y2 && strcmp(y1, y2) == 0, "canonical text differs:\n%s\n%s", y1 ? y1 : "", y2 ? y2 : "");
    CHECK(y1 && strcmp(y1, "learn.lr: {log_uniform: [1e-05, 0.01]}\nlearn.gamma: {uniform: [0.9, 0.999]}\n"
                           "model.hidden: {choice: [\"32\", \"64\", \"128\"]}\nmodel.encoder: {choice: [\"mamba2\", "
                           "\"none\"]}\nlearn.n_step: {int: [1, 5]}\n") == 0, "canonical text: %s", y1 ? y1 : "");
    CHECK(t.n_params == 5 && t.params[0].lo == s.params[0].lo && t.params[1].hi == s.params[1].hi, "read back");
    free(y1);
    free(y2);
}

static void test_refused(void) {
    vp_config base;
    vp_config_defaults(&base);
    vp_search_space s;
    struct { const char* yaml; const char* msg; } bad[] = {
        {"learn.lrr: {uniform: [0.1, 0.2]}\n", "space.yaml:1: unknown key 'learn.lrr'; did you mean 'learn.lr'?"},
        {"learn.lr: {uniform: [0.1, 0.2]}\nrun.seed: {int: [1, 9]}\n",
         "space.yaml:2: run.seed is not searchable: a search varies only model.*, learn.*"},
        {"data.path: {choice: [a.csv, b.csv]}\n", "space.yaml:1: data.path is not searchable"},
        {"train.iterations: {int: [10, 20]}\n", "space.yaml:1: train.iterations is not searchable"},
        {"learn.lr: {uniform: [0.1, 0.2]}\nlearn:\n  lr: {uniform: [0.1, 0.3]}\n",
         "space.yaml:3: learn.lr is given twice (first at line 1)"},
        {"learn.lr: 0.1\n", "space.yaml:1: learn.lr: expected one distribution, {uniform: [lo, hi]}"},
        {"learn.lr: {uniform: [0.1, 0.2], int: [1, 2]}\n", "space.yaml:1: learn.lr: expected one distribution"},
        {"learn.lr: {normal: [0.1, 0.2]}\n", "space.yaml:1: learn.lr: unknown distribution 'normal'"},
        {"learn.lr: {uniform: 0.1}\n", "space.yaml:1: learn.lr: uniform takes a list, got a value"},
        {"learn.lr: {int: [1, 2]}\n", "space.yaml:1: learn.lr: int needs an integer key"},
        {"model.hidden: {uniform: [16, 64]}\n", "space.yaml:1: model.hidden: uniform needs a number key; model.hidden "
                                                "is not one (int: [lo, hi] for an integer key)"},
        {"model.encoder: {log_uniform: [0, 1]}\n", "model.encoder: log_uniform needs a number key"},
        {"learn.lr: {uniform: [0.1]}\n", "space.yaml:1: learn.lr: uniform takes two bounds [lo, hi], got 1 value"},
        {"learn.lr: {uniform: [0.1, 0.2, 0.3]}\n", "learn.lr: uniform takes two bounds [lo, hi], got 3 values"},
        {"learn.lr: {uniform: [0.1, abc]}\n", "space.yaml:1: learn.lr: a bound must be a finite number, got 'abc'"},
        {"learn.lr: {uniform: [0.1, [0.2]]}\n", "space.yaml:1: learn.lr: a bound must be a finite number, got a list"},
        {"learn.lr: {uniform: [0.1, {a: 1}]}\n", "learn.lr: a bound must be a finite number, got a mapping"},
        {"learn.lr: {uniform: [0.1, inf]}\n", "learn.lr: a bound must be a finite number, got 'inf'"},
        {"? [learn.lr]\n: {uniform: [0.1, 0.2]}\n", "space.yaml:1: a key must be a name, got a list"},
        {"learn.lr:\n", "space.yaml:1: learn.lr: expected one distribution"},
        {"learn.lr: {uniform: }\n", "space.yaml:1: learn.lr: uniform takes a list, got a value"},
        {"learn.n_step: {int: [1, 2.5]}\n", "space.yaml:1: learn.n_step: an int bound must be a whole number, got '2.5'"},
        {"learn.gamma: {uniform: [0.99, 0.9]}\n",
         "space.yaml:1: learn.gamma: uniform bounds must be ordered lo < hi, got [0.99, 0.9]"},
        {"learn.n_step: {int: [3, 3]}\n", "space.yaml:1: learn.n_step: int bounds must be ordered lo < hi"},
        {"learn.gamma: {uniform: [0.5, 1.5]}\n", "space.yaml:1: learn.gamma: the upper bound"},
        {"learn.n_step: {int: [0, 3]}\n", "space.yaml:1: learn.n_step: the lower bound"},
        {"learn.weight_decay: {log_uniform: [0, 0.1]}\n",
         "space.yaml:1: learn.weight_decay: log_uniform bounds must be > 0, got [0, 0.1]"},
        {"model.hidden: {choice: [32, abc]}\n", "space.yaml:1: model.hidden: a choice"},
        {"model.hidden: {choice: [32, 64, 32.0e0]}\n", "space.yaml:1: model.hidden: choice 32 is given twice"},
        {"model.hidden: {choice: [32, 0x20]}\n",
         "space.yaml:1: model.hidden: a choice: model.hidden: expected an integer in [1, 65536], got '0x20'"},
        {"model.hidden: {choice: []}\n", "space.yaml:1: model.hidden: choice takes 1 to 16 values, got 0"},
        {"model.hidden: {choice: [[1, 2]]}\n", "space.yaml:1: model.hidden: a choice is a value, got a list"},
        {"", "space.yaml: holds no keys"},
        {"# nothing\n", "space.yaml: holds no keys"},
        {"- learn.lr\n", "space.yaml:1: expected a mapping of keys to distributions, got a list"},
        {"learn.lr: {uniform: [0.1, 0.2]\n", "space.yaml:2: not valid YAML"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        vp_clear_error();
        const vp_status st = vp_search_space_parse(bad[i].yaml, "space.yaml", &base, &s);
        CHECK(st != VP_OK && strstr(vp_last_error(), bad[i].msg) != NULL, "space %zu (%s): got \"%s\", expected \"%s\"",
              i, bad[i].yaml, vp_last_error(), bad[i].msg);
        CHECK(s.n_params == 0, "space %zu: a refused space holds no keys", i);
    }
    // a missing file names it
    CHECK_STATUS(vp_search_space_load("/nonexistent/space.yaml", &base, &s), VP_ERR_IO,
                 "cannot open search space /nonexistent/space.yaml");
}

static void test_unit_by_hand(void) {
    // 27 high bits of word 0 and 26 of word 1 of Philox (seed, stream trial, index key)
    const uint64_t seed = 0x1234567890abcdefULL;
    for (int64_t trial = 0; trial < 5; ++trial)
        for (int key = 0; key < 4; ++key) {
            const vp_u32x4 w = vp_rng_draw(seed, (uint64_t)trial, (uint64_t)key);
            const double want = ((double)(w.v[0] >> 5) * 67108864.0 + (double)(w.v[1] >> 6)) / 9007199254740992.0;
            const double got = vp_search_unit(seed, trial, key);
            CHECK(got == want && got >= 0.0 && got < 1.0, "unit(%lld, %d) = %.17g, expected %.17g", (long long)trial, key,
                  got, want);
        }
}

static void test_deterministic(void) {
    vp_config base;
    vp_config_defaults(&base);
    vp_search_space s, lr_only, reordered;
    CHECK_OK(vp_search_space_parse(GOOD, "space.yaml", &base, &s));
    CHECK_OK(vp_search_space_parse("learn.lr: {log_uniform: [1e-5, 1e-2]}\n", "lr.yaml", &base, &lr_only));
    CHECK_OK(vp_search_space_parse("learn.n_step: {int: [1, 5]}\nlearn.lr: {log_uniform: [1e-5, 1e-2]}\n", "r.yaml",
                                   &base, &reordered));
    int differ = 0;
    for (int64_t t = 0; t < 50; ++t) {
        vp_search_draw a, b, c, d, e;
        vp_search_sample(&s, 7, t, &a);
        vp_search_sample(&s, 7, t, &b);
        vp_search_sample(&lr_only, 7, t, &c);
        vp_search_sample(&reordered, 7, t, &d);
        vp_search_sample(&s, 8, t, &e);
        CHECK(memcmp(&a, &b, sizeof a) == 0, "trial %lld: two draws of one seed differ", (long long)t);
        // trial t's lr is the same whatever else the space holds, wherever it stands
        CHECK(strcmp(a.values[0], c.values[0]) == 0 && strcmp(a.values[0], d.values[1]) == 0,
              "trial %lld: lr %s, %s alone, %s reordered", (long long)t, a.values[0], c.values[0], d.values[1]);
        CHECK(strcmp(a.values[4], d.values[0]) == 0, "trial %lld: n_step %s, %s reordered", (long long)t, a.values[4],
              d.values[0]);
        differ += strcmp(a.values[0], e.values[0]) != 0;
    }
    CHECK(differ == 50, "another seed drew the same lr in %d of 50 trials", 50 - differ);
    // a value by hand: round to 6 significant digits of exp(log lo + u (log hi - log lo))
    vp_search_draw a;
    vp_search_sample(&s, 7, 3, &a);
    const double u = vp_search_unit(7, 3, s.params[0].key_index);
    char want[32];
    snprintf(want, sizeof want, "%.6g", exp(log(1e-5) + u * (log(1e-2) - log(1e-5))));
    CHECK(strcmp(a.values[0], want) == 0, "trial 3's lr %s, expected %s", a.values[0], want);
    const double ug = vp_search_unit(7, 3, s.params[1].key_index);
    snprintf(want, sizeof want, "%.6g", 0.9 + ug * (0.999 - 0.9));
    CHECK(strcmp(a.values[1], want) == 0, "trial 3's gamma %s, expected %s", a.values[1], want);
    const double un = vp_search_unit(7, 3, s.params[4].key_index);
    snprintf(want, sizeof want, "%d", 1 + (int)floor(un * 5));
    CHECK(strcmp(a.values[4], want) == 0, "trial 3's n_step %s, expected %s", a.values[4], want);
}

static void test_distributions(void) {
    vp_config base;
    vp_config_defaults(&base);
    vp_search_space s;
    CHECK_OK(vp_search_space_parse(GOOD, "space.yaml", &base, &s));
    const int n = 20000;
    double sum_log = 0.0, sum_g = 0.0, lo_lr = 1.0, hi_lr = 0.0;
    int n_step[7] = {0}, hidden[3] = {0}, mamba[2] = {0};
    for (int64_t t = 0; t < n; ++t) {
        vp_search_draw d;
        vp_search_sample(&s, 11, t, &d);
        const double lr = strtod(d.values[0], NULL), g = strtod(d.values[1], NULL);
        sum_log += log10(lr), sum_g += g;
        lo_lr = fmin(lo_lr, lr), hi_lr = fmax(hi_lr, lr);
        CHECK(lr >= 1e-5 && lr <= 1e-2 && g >= 0.9 && g <= 0.999, "trial %lld: lr %g, gamma %g out of bounds",
              (long long)t, lr, g);
        const int k = atoi(d.values[4]);
        if (k >= 0 && k <= 6) n_step[k]++;
        for (int c = 0; c < 3; ++c) hidden[c] += strcmp(d.values[2], s.params[2].choices[c]) == 0;
        mamba[strcmp(d.values[3], "mamba2") == 0 ? 0 : 1]++;
    }
    // log10 lr uniform on [-5, -2]: mean -3.5, SE 0.866 / sqrt(n) = 0.006; 5 SE
    CHECK_NEAR(sum_log / n, -3.5, 0.03, 0.0);
    CHECK_NEAR(sum_g / n, 0.9495, 5.0 * 0.0286 / sqrt((double)n), 0.0);
    // the draws reach both ends (within 0.2 % of the log range)
    CHECK(log10(lo_lr) < -5.0 + 0.006 && log10(hi_lr) > -2.0 - 0.006, "lr range [%g, %g]", lo_lr, hi_lr);
    // int [1, 5]: both ends and each value between about n / 5 times (5 SE = 5 sqrt(n p (1-p)) = 283), none outside
    CHECK(n_step[0] == 0 && n_step[6] == 0, "n_step outside [1, 5]: %d zeros, %d sixes", n_step[0], n_step[6]);
    for (int k = 1; k <= 5; ++k) CHECK(abs(n_step[k] - n / 5) < 283, "n_step %d drawn %d times of %d", k, n_step[k], n);
    for (int c = 0; c < 3; ++c) CHECK(abs(hidden[c] - n / 3) < 334, "hidden choice %d drawn %d times", c, hidden[c]);
    CHECK(abs(mamba[0] - n / 2) < 354, "encoder mamba2 drawn %d times of %d", mamba[0], n);
}

static void test_apply(void) {
    vp_config base;
    vp_config_defaults(&base);
    vp_search_space s;
    CHECK_OK(vp_search_space_parse(GOOD, "space.yaml", &base, &s));
    vp_search_draw d;
    vp_search_sample(&s, 5, 2, &d);
    vp_config c = base;
    CHECK_OK(vp_search_apply(&s, &d, 2, &c));
    char buf[64];
    for (int i = 0; i < s.n_params; ++i) {
        vp_config one = base;
        CHECK_OK(vp_config_set(&one, s.params[i].key->name, d.values[i], "test"));
        CHECK(strcmp(vp_config_format_value(&c, s.params[i].key, buf, sizeof buf),
                     vp_config_format_value(&one, s.params[i].key, buf + 32, 32)) == 0,
              "%s not set to %s", s.params[i].key->name, d.values[i]);
    }
    // a draw the config refuses: model.hidden 64 with model.mamba_head_dim 48 is not a multiple
    vp_search_space m;
    CHECK_OK(vp_search_space_parse("model.mamba_head_dim: {choice: [64, 48]}\n", "m.yaml", &base, &m));
    int refused = 0;
    for (int64_t t = 0; t < 20 && !refused; ++t) {
        vp_search_sample(&m, 1, t, &d);
        if (strcmp(d.values[0], "48") != 0) continue;
        c = base;
        char want[96];
        snprintf(want, sizeof want, "trial %lld (model.mamba_head_dim=48)", (long long)t);
        CHECK_STATUS(vp_search_apply(&m, &d, t, &c), VP_ERR_INVALID_ARG, want);
        CHECK(strstr(vp_last_error(), "is not a multiple of model.mamba_head_dim") != NULL, "%s", vp_last_error());
        refused = 1;
    }
    CHECK(refused, "no trial of 20 drew 48");
}

int main(void) {
    RUN_TEST(test_parse);
    RUN_TEST(test_refused);
    RUN_TEST(test_unit_by_hand);
    RUN_TEST(test_deterministic);
    RUN_TEST(test_distributions);
    RUN_TEST(test_apply);
    return vpt_finish();
}
