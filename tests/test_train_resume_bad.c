/* Tests of a resume from a tampered checkpoint (CPU): every restored value is checked before
 * anything uses it. Each case edits one word of a trainer's state (an env field, a replay
 * counter, a pending window, a stored slot, a device counter, a metadata counter), saves it and
 * loads it into a second trainer: the load is refused with a message naming the field and the
 * value, and the untouched checkpoint still loads and trains. A refused resume of a run folder
 * changes none of its files. */
#include <math.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "learn/replay_impl.h"
#include "test_train_util.h"
#include "vp_test.h"

/* A small run: a ring of 400 transitions, a few iterations. */
static const char* const SMALL[] = {"replay.capacity=400", "train.iterations=6"};

/* A trainer with its data on its own backend. */
typedef struct rig {
    vp_backend* b;
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    int ok;
} rig;

static int rig_init(rig* r) {
    memset(r, 0, sizeof *r);
    if (vp_backend_cpu_init(&r->b) != VP_OK || !vpt_train_cfg(&r->cfg, 2, SMALL)) return 0;
    if (vp_train_data_load(&r->d, &r->cfg) != VP_OK) return 0;
    if (vp_trainer_init(&r->t, r->b, &r->cfg, &r->d) != VP_OK) return 0;
    r->ok = 1;
    return 1;
}

static void rig_free(rig* r) {
    if (r->ok) vp_trainer_free(&r->t);
    vp_train_data_free(&r->d);
    vp_backend_free(r->b);
}

/* One edit of the trainer's state before a save. */
typedef void edit_fn(vp_trainer* t);

static void env_t_huge(vp_trainer* t) { t->env.state.t[1] = INT32_MAX; }
static void env_t_negative(vp_trainer* t) { t->env.state.t[1] = -7; }
static void env_window_long(vp_trainer* t) {
    vp_env_state* s = &t->env.state;
    int64_t k = 0;
    for (int64_t i = 1; i < t->env.n_envs; ++i) k = s->t[i] < s->t[k] ? i : k;
    s->window_end[k] = s->t[k] + t->env.config.episode_bars + 1;
}
static void env_cash_nan(vp_trainer* t) { t->env.state.cash[0] = NAN; }
static void env_position_huge(vp_trainer* t) { t->env.state.position[3] = 1000000; }
static void env_peak_low(vp_trainer* t) { t->env.state.peak[4] = t->env.state.equity[4] / 2; }
static void ring_head_negative(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->head = -5; }
static void ring_size_big(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->size = 1 << 20; }
static void ring_pushes_max(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->pushes = INT64_MAX; }
static void ring_emitted_max(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->emitted = INT64_MAX; }
static void ring_sample_max(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->sample_step = INT64_MAX; }
static void ring_max_priority_nan(vp_trainer* t) { vp_replay_dev_get(t->replay)->ctrl->max_priority = NAN; }
static void pending_count(vp_trainer* t) { vp_replay_dev_get(t->replay)->p_count[2] = 1000; }
static void pending_count_shifted(vp_trainer* t) {
    int32_t* c = vp_replay_dev_get(t->replay)->p_count;
    c[2] = c[2] == 0 ? 1 : c[2] - 1;
}
static void pending_start(vp_trainer* t) { vp_replay_dev_get(t->replay)->p_start[5] = -1; }
static void slot_bar_max(vp_trainer* t) { vp_replay_dev_get(t->replay)->bar[4] = INT32_MAX; }
static void slot_action(vp_trainer* t) { vp_replay_dev_get(t->replay)->act[4 * 4 + 1] = 9; }
static void slot_priority(vp_trainer* t) { vp_replay_dev_get(t->replay)->prio[6] = -1.0f; }
static void empty_slot_priority(vp_trainer* t) { vp_replay_dev_get(t->replay)->prio[399] = 0.5f; }
static void slot_owner(vp_trainer* t) { vp_replay_dev_get(t->replay)->owner[7] = 3; }
static void adam_step_max(vp_trainer* t) { ((int32_t*)t->learner.step.data)[0] = INT32_MAX; }
static void adam_v_negative(vp_trainer* t) { ((float*)t->learner.adam_v.data)[3] = -1.0f; }
static void param_nan(vp_trainer* t) { ((float*)t->learner.model.params.data)[5] = NAN; }
static void collect_step_huge(vp_trainer* t) { ((int64_t*)t->collector.step.data)[0] = INT64_MAX - 1; }
static void nan_steps_nan(vp_trainer* t) { ((float*)t->learner.stats.data)[VP_STAT_NAN_STEPS] = NAN; }
static void iteration_negative(vp_trainer* t) { t->count.iteration = -100; }
static void learner_steps_max(vp_trainer* t) { t->count.learner_steps = INT64_MAX; }
static void env_steps_off(vp_trainer* t) { t->count.env_steps += 1; }
static void best_without_sharpe(vp_trainer* t) { t->best_iteration = 2; }

typedef struct edit_case {
    const char* name;
    edit_fn* edit;
    vp_status status;
    const char* needle;
} edit_case;

static const edit_case CASES[] = {
    {"env t huge", env_t_huge, VP_ERR_PARSE, "env.state': vp_env_state_set: env 1 has t 2147483647"},
    {"env t negative", env_t_negative, VP_ERR_PARSE, "env 1 has t -7"},
    {"env window too long", env_window_long, VP_ERR_PARSE, "episode_bars 61 long"},
    {"env cash NaN", env_cash_nan, VP_ERR_PARSE, "env 0 has cash nan"},
    {"env position 1e6", env_position_huge, VP_ERR_PARSE, "env 3 has position 1000000 (allowed -3 .. 3"},
    {"env peak below equity", env_peak_low, VP_ERR_PARSE, "env 4 has peak"},
    {"ring head negative", ring_head_negative, VP_ERR_PARSE, "replay.state': vp_replay_check_state: head = -5"},
    {"ring size over capacity", ring_size_big, VP_ERR_PARSE, "size = 1048576"},
    {"ring pushes at max", ring_pushes_max, VP_ERR_PARSE, "pushes = 9223372036854775807"},
    {"ring emitted at max", ring_emitted_max, VP_ERR_PARSE, "emitted = 9223372036854775807"},
    {"ring sample step at max", ring_sample_max, VP_ERR_PARSE, "sample_step = 9223372036854775807"},
    {"ring max priority NaN", ring_max_priority_nan, VP_ERR_PARSE, "max_priority = nan"},
    {"pending count 1000", pending_count, VP_ERR_PARSE, "env 2 has 1000 pending steps (allowed 0 .. n_step - 1 = 2)"},
    {"pending count off by one", pending_count_shifted, VP_ERR_PARSE, "steps into its episode"},
    {"pending start -1", pending_start, VP_ERR_PARSE, "env 5 has pending start -1"},
    {"slot bar INT_MAX", slot_bar_max, VP_ERR_PARSE, "slot 4 has bar_idx 2147483647 (allowed"},
    {"slot action 9", slot_action, VP_ERR_PARSE, "slot 4 has action[1] = 9 (allowed 0 .. 3)"},
    {"slot priority -1", slot_priority, VP_ERR_PARSE, "slot 6 has priority -1"},
    {"empty slot priority", empty_slot_priority, VP_ERR_PARSE, "empty slot 399"},
    {"slot owner", slot_owner, VP_ERR_PARSE, "slot 7 has owner 3"},
    {"adam.step INT_MAX", adam_step_max, VP_ERR_PARSE, "'adam.step' = 2147483647"},
    {"adam.v negative", adam_v_negative, VP_ERR_PARSE, "'adam.v."},
    {"parameter NaN", param_nan, VP_ERR_NUMERIC, "is nan: its values must be finite"}, /* the checkpoint reader refuses it first */
    {"collect.step huge", collect_step_huge, VP_ERR_PARSE, "'collect.step' = 9223372036854775806"},
    {"nan_steps NaN", nan_steps_nan, VP_ERR_PARSE, "nan_steps nan"},
    {"iteration -100", iteration_negative, VP_ERR_PARSE, "vulpes.iteration = -100 (allowed 0 .."},
    {"learner_steps INT64_MAX", learner_steps_max, VP_ERR_PARSE, "vulpes.learner_steps = 9223372036854775807"},
    {"env_steps off by one", env_steps_off, VP_ERR_PARSE, "vulpes.env_steps"},
    {"best iteration without a Sharpe", best_without_sharpe, VP_ERR_PARSE, "vulpes.best_val_sharpe"},
};

/* Rewrites a safetensors file so that every tensor's data_offsets start at 0 (all overlap). */
static int offsets_to_zero(const char* src, const char* dst) {
    long n = 0;
    char* f = vpt_slurp(src, &n);
    if (!f || n < 8) return free(f), 0;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; --i) hl = hl << 8 | (uint8_t)f[i];
    char* js = (char*)calloc(hl + 1, 1);
    memcpy(js, f + 8, hl);
    cJSON* root = cJSON_Parse(js);
    free(js);
    if (!root) return free(f), 0;
    for (cJSON* e = root->child; e; e = e->next) {
        cJSON* off = cJSON_GetObjectItem(e, "data_offsets");
        if (!off || cJSON_GetArraySize(off) != 2) continue;
        double len = cJSON_GetArrayItem(off, 1)->valuedouble - cJSON_GetArrayItem(off, 0)->valuedouble;
        cJSON_ReplaceItemInArray(off, 0, cJSON_CreateNumber(0));
        cJSON_ReplaceItemInArray(off, 1, cJSON_CreateNumber(len));
    }
    char* out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    size_t ol = strlen(out), padded = (ol + 7) / 8 * 8;
    FILE* w = fopen(dst, "wb");
    int ok = w != NULL;
    if (w) {
        uint8_t len8[8];
        for (int i = 0; i < 8; ++i) len8[i] = (uint8_t)(padded >> (8 * i));
        fwrite(len8, 1, 8, w);
        fwrite(out, 1, ol, w);
        for (size_t i = ol; i < padded; ++i) fputc(' ', w);
        fwrite(f + 8 + hl, 1, (size_t)(n - 8 - (long)hl), w);
        fclose(w);
    }
    free(out);
    free(f);
    return ok;
}

static void test_tampered_state_is_refused(void) {
    rig a, r;
    if (!rig_init(&a) || !rig_init(&r)) {
        CHECK(0, "trainer: %s", vp_last_error());
        rig_free(&a), rig_free(&r);
        return;
    }
    vp_trainer* t = &a.t;
    char good[512], bad[512];
    vpt_tmp_dir(good, sizeof good, "good.safetensors");
    vpt_tmp_dir(bad, sizeof bad, "bad.safetensors");
    CHECK_OK(vp_trainer_warmup(t));
    CHECK_OK(vp_trainer_iterate(t, 3));
    CHECK_OK(vp_trainer_save(t, good, VP_CKPT_RESUME));
    CHECK_OK(vp_trainer_load(&r.t, good));
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; ++k) {
        const edit_case* c = &CASES[k];
        CHECK_OK(vp_trainer_load(t, good));
        c->edit(t);
        CHECK_OK(vp_trainer_save(t, bad, VP_CKPT_RESUME));
        vp_clear_error();
        vp_status s = vp_trainer_load(&r.t, bad);
        CHECK(s == c->status && strstr(vp_last_error(), c->needle) != NULL,
              "%s: load -> %s \"%s\", expected %s mentioning \"%s\"", c->name, vp_status_name(s), vp_last_error(),
              vp_status_name(c->status), c->needle);
    }
    // Every tensor read from offset 0: refused (by the reader or by the state checks).
    CHECK(offsets_to_zero(good, bad), "cannot rewrite %s", good);
    CHECK(vp_trainer_load(&r.t, bad) != VP_OK, "a checkpoint whose tensors all start at offset 0 was loaded");
    // The untouched checkpoint still loads into the trainer that refused the others, and trains.
    CHECK_OK(vp_trainer_load(&r.t, good));
    CHECK(r.t.count.iteration == 3, "iteration %lld after the load", (long long)r.t.count.iteration);
    CHECK_OK(vp_trainer_iterate(&r.t, 2));
    CHECK_OK(vp_trainer_iterate(t, 2));
    remove(good), remove(bad);
    rig_free(&a), rig_free(&r);
}

/* The learner's adaptive state (the signal bus's controls, PopArt's moments) is checked on a
 * resume too: a value out of its range is refused naming the tensor and the value. */
static const char* const ADAPT[] = {"replay.capacity=400", "train.iterations=6", "signals.adapt_tau=true",
                                    "signals.adapt_gamma=true", "signals.every=2", "learn.popart=true"};

static void test_tampered_learner_state_is_refused(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    vp_trainer t, r;
    memset(&d, 0, sizeof d), memset(&t, 0, sizeof t), memset(&r, 0, sizeof r);
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 6, ADAPT) || vp_train_data_load(&d, &cfg) != VP_OK ||
        vp_trainer_init(&t, b, &cfg, &d) != VP_OK || vp_trainer_init(&r, b, &cfg, &d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        return;
    }
    char good[512], bad[512];
    vpt_tmp_dir(good, sizeof good, "adapt-good.safetensors");
    vpt_tmp_dir(bad, sizeof bad, "adapt-bad.safetensors");
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK_OK(vp_trainer_iterate(&t, 3));
    CHECK_OK(vp_trainer_save(&t, good, VP_CKPT_RESUME));
    CHECK_OK(vp_trainer_load(&r, good));
    struct {
        const char* name;
        int popart; /* 0: a control, 1: a PopArt slot */
        int slot;
        float value;
        const char* needle;
    } cases[] = {
        {"lr negative", 0, VP_CTL_LR, -1e-3f, "'learner.controls': lr = -0.001 is out of its range"},
        {"tau above 1", 0, VP_CTL_TAU, 5.0f, "tau = 5 is out of its range"},
        {"gamma NaN", 0, VP_CTL_GAMMA, NAN, "gamma = nan is out of its range"},
        {"kelly cap negative", 0, VP_CTL_KELLY_CAP, -1.0f, "kelly_cap = -1 is out of its range"},
        {"tick at every", 0, VP_CTL_TICK, 2.0f, "tick = 2 is out of its range"},
        {"popart sigma 0", 1, 2, 0.0f, "'learner.popart': mu"},
        {"popart nu negative", 1, 1, -1.0f, "nu -1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        CHECK_OK(vp_trainer_load(&t, good));
        float* dst = cases[k].popart ? (float*)t.learner.popart.data : (float*)t.learner.ctl.data;
        dst[cases[k].slot] = cases[k].value;
        CHECK_OK(vp_trainer_save(&t, bad, VP_CKPT_RESUME));
        vp_clear_error();
        const vp_status s = vp_trainer_load(&r, bad);
        CHECK(s == VP_ERR_PARSE && strstr(vp_last_error(), cases[k].needle) != NULL,
              "%s: load -> %s \"%s\", expected VP_ERR_PARSE mentioning \"%s\"", cases[k].name, vp_status_name(s),
              vp_last_error(), cases[k].needle);
    }
    CHECK_OK(vp_trainer_load(&r, good));
    CHECK_OK(vp_trainer_iterate(&r, 2));
    remove(good), remove(bad);
    vp_trainer_free(&t), vp_trainer_free(&r);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

static void test_refused_resume_changes_nothing(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "refused-resume");
    vpt_rm_run(dir);
    vp_backend* b = NULL;
    vp_config cfg;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 2, SMALL)) return;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = VP_RUN_CREATE;
    o.stop_after = 3;
    vp_train_result res;
    CHECK_OK(vp_train_run(&cfg, b, &o, &res));
    // Replace last.safetensors by one whose env 0 stands before the span.
    rig r;
    char last[1200];
    snprintf(last, sizeof last, "%s/last.safetensors", dir);
    if (rig_init(&r)) {
        CHECK_OK(vp_trainer_load(&r.t, last));
        r.t.env.state.t[0] = -1;
        CHECK_OK(vp_trainer_save(&r.t, last, VP_CKPT_RESUME));
    }
    rig_free(&r);
    static const char* files[] = {"config.yaml", "metrics.jsonl", "last.safetensors", "summary.json"};
    enum { NF = sizeof files / sizeof files[0] };
    char* before[NF];
    size_t len[NF];
    for (int i = 0; i < NF; ++i) before[i] = vpt_read_file(dir, files[i], &len[i]);
    o.mode = VP_RUN_RESUME;
    o.stop_after = 0;
    CHECK_STATUS(vp_train_run(&cfg, b, &o, &res), VP_ERR_PARSE, "env 0 has t -1");
    for (int i = 0; i < NF; ++i) {
        size_t n = 0;
        char* now = vpt_read_file(dir, files[i], &n);
        CHECK(before[i] && now && n == len[i] && memcmp(before[i], now, n) == 0, "%s changed by a refused resume",
              files[i]);
        free(now), free(before[i]);
    }
    vpt_rm_run(dir);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_tampered_state_is_refused);
    RUN_TEST(test_tampered_learner_state_is_refused);
    RUN_TEST(test_refused_resume_changes_nothing);
    return vpt_finish();
}
