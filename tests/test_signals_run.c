/* The signal bus in training runs (CPU, the test config):
 * - the bus alone only observes: 12 iterations with signals.enable leave the parameters,
 *   target, moments and env state of the run without it, bit for bit;
 * - a run with every switch on (the four rules every 3 learner steps, the warm-up cosine
 *   schedule) repeats itself, and 23 iterations + a stop + a resume equal 40 straight
 *   (train and eval lines with the bus's keys, last and best checkpoints); its last train
 *   line holds the schedule's rate and 40 / 3 rule applications;
 * - a Kelly cap driven to 0 keeps every env flat, where the run without it trades. */
#include "test_train_util.h"

#include <math.h>

#include "vp_test.h"

/* A trainer of the test configuration with n overrides, warmed up, after `iters` iterations. */
static int trained(vp_trainer* t, vp_train_data* d, vp_backend* b, int n, const char* const* over, int64_t iters) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, n, over) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    if (vp_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    CHECK_OK(vp_trainer_warmup(t));
    CHECK_OK(vp_trainer_iterate(t, iters));
    CHECK_OK(vp_backend_sync(b));
    return 1;
}

/* Bytes of tensor x equal in two runs. */
static int same(const vp_tensor* a, const vp_tensor* b) {
    return vp_tensor_bytes(a) == vp_tensor_bytes(b) && memcmp(a->data, b->data, vp_tensor_bytes(a)) == 0;
}

static vp_backend* g_b;

static void test_bus_only_observes(void) {
    vp_backend* b = g_b;
    const char* on[] = {"signals.enable=true"};
    vp_trainer t0, t1;
    vp_train_data d0, d1;
    if (!trained(&t0, &d0, b, 0, NULL, 12)) return;
    if (!trained(&t1, &d1, b, 1, on, 12)) {
        vp_trainer_free(&t0), vp_train_data_free(&d0);
        return;
    }
    CHECK(same(&t0.learner.model.params, &t1.learner.model.params) && same(&t0.learner.target, &t1.learner.target) &&
              same(&t0.learner.adam_m, &t1.learner.adam_m) && same(&t0.learner.adam_v, &t1.learner.adam_v),
          "the bus changed the training");
    CHECK(t0.env.storage.bytes == t1.env.storage.bytes &&
              memcmp(t0.env.storage.dev, t1.env.storage.dev, t0.env.storage.bytes) == 0,
          "the bus changed the env state");
    const float* s = t1.learner.signals_host;
    CHECK(s[VP_SIG_STEPS] == 12.0f && s[VP_SIG_RULE_RUNS] == 0.0f && isfinite(s[VP_SIG_LOSS_FAST]) &&
              s[VP_SIG_ENTROPY] > 0.0f && s[VP_SIG_ATOM_UTIL] > 0.0f && s[VP_SIG_ATOM_UTIL] <= 1.0f &&
              s[VP_SIG_TARGET_DRIFT] > 0.0f && s[VP_SIG_LR] == 1e-3f,
          "bus after 12 steps: steps %g, runs %g, entropy %g, util %g, drift %g, lr %g", (double)s[VP_SIG_STEPS],
          (double)s[VP_SIG_RULE_RUNS], (double)s[VP_SIG_ENTROPY], (double)s[VP_SIG_ATOM_UTIL],
          (double)s[VP_SIG_TARGET_DRIFT], (double)s[VP_SIG_LR]);
    vp_trainer_free(&t0), vp_trainer_free(&t1);
    vp_train_data_free(&d0), vp_train_data_free(&d1);
}

static const char* const ALL_ON[] = {"signals.adapt_tau=true", "signals.adapt_epsilon=true",
                                     "signals.adapt_gamma=true", "signals.kelly=true",
                                     "signals.every=3",        "learn.lr_schedule=warmup_cosine",
                                     "learn.warmup_steps=5"};

/* The number after "key": in the last line of text that holds it; NaN when absent. */
static double last_value(const char* text, const char* key) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char* at = NULL;
    for (const char* p = strstr(text, pat); p; p = strstr(p + 1, pat)) at = p;
    return at ? strtod(at + strlen(pat), NULL) : NAN;
}

static void test_all_on_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "sig1");
    vpt_tmp_dir(d2, sizeof d2, "sig2");
    vpt_tmp_dir(d3, sizeof d3, "sig3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, 7, ALL_ON, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 0, NULL, 7, ALL_ON, &r2));
    CHECK_OK(vpt_train_run(d3, VP_RUN_CREATE, 23, NULL, 7, ALL_ON, &r3));
    CHECK(r3.count.iteration == 23, "stopped at %lld", (long long)r3.count.iteration);
    CHECK_OK(vpt_train_run(d3, VP_RUN_RESUME, 0, NULL, 7, ALL_ON, &r3));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    CHECK(a && b && strcmp(a, b) == 0, "two runs of one config with every switch on differ");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed run differs from the straight one");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    if (c) {
        // 40 learner steps: 13 rule applications; step 40's rate 1e-3 0.5 (1 + cos(pi 34 / 35))
        CHECK(last_value(c, "sig.rule_runs") == 13.0 && last_value(c, "sig.steps") == 40.0, "rule runs %g, steps %g",
              last_value(c, "sig.rule_runs"), last_value(c, "sig.steps"));
        vp_signals_cfg sc = vp_signals_cfg_default();
        sc.lr_schedule = VP_LR_WARMUP_COSINE, sc.warmup_steps = 5, sc.total_steps = 40;
        CHECK_NEAR(last_value(c, "sig.lr"), vp_signals_lr_at(&sc, 1e-3f, 39), 0.0, 1e-6);
        CHECK_NEAR(vp_signals_lr_at(&sc, 1e-3f, 39), 1e-3 * 0.5 * (1.0 + cos(3.14159265358979323846 * 34.0 / 35.0)), 0.0, 1e-6);
        const double tau = last_value(c, "sig.tau"), cap = last_value(c, "sig.kelly_cap");
        const double g = last_value(c, "sig.gamma"), es = last_value(c, "sig.eps_scale");
        // the bounds as floats (the log holds each float's exact decimal)
        CHECK(tau >= (float)1e-4 && tau <= (float)0.05 && cap >= (float)0.1 && cap <= 1.0 && g >= (float)0.9 &&
                  g <= (float)0.999 && es >= 0.5 && es <= 2.0,
              "controls outside their bounds: tau %g, cap %g, gamma %g, eps scale %g", tau, cap, g, es);
    }
    free(a), free(b), free(c), free(e);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

/* Positions of every env: 1 when any is open. */
static int any_open(const vp_trainer* t) {
    for (int64_t i = 0; i < t->env.n_envs; ++i)
        if (t->env.state.position[i] != 0) return 1;
    return 0;
}

static void test_kelly_cap_flattens(void) {
    vp_backend* b = g_b;
    const char* base[] = {"collect.epsilon_start=0.5", "collect.epsilon_end=0.5"};
    const char* capped[] = {"collect.epsilon_start=0.5", "collect.epsilon_end=0.5", "signals.kelly=true",
                            "signals.every=1", "signals.kelly_min=0", "signals.kelly_fraction=1e-9"};
    vp_trainer t0, t1;
    vp_train_data d0, d1;
    if (!trained(&t0, &d0, b, 2, base, 10)) return;
    if (!trained(&t1, &d1, b, 6, capped, 10)) {
        vp_trainer_free(&t0), vp_train_data_free(&d0);
        return;
    }
    CHECK(any_open(&t0), "without the cap no env holds a position after 10 iterations (the test needs one)");
    CHECK(!any_open(&t1), "with the cap at about 0 an env holds a position");
    CHECK(t1.learner.signals_host[VP_SIG_KELLY_CAP] < 1e-6f, "cap %g", (double)t1.learner.signals_host[VP_SIG_KELLY_CAP]);
    vp_trainer_free(&t0), vp_trainer_free(&t1);
    vp_train_data_free(&d0), vp_train_data_free(&d1);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_bus_only_observes);
    RUN_TEST(test_all_on_repeat_and_resume);
    RUN_TEST(test_kelly_cap_flattens);
    vp_backend_free(g_b);
    return vpt_finish();
}
