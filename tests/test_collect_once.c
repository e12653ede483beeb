/* Tests of the encode-once collection on the CPU, against S single steps of the step-by-step
 * collector (vp_collector_step) from the same parameters, env seeds and exploration seed:
 * - the replay ring (every field), its counters, the env state (every byte), the step
 *   counter and its epsilon, and the last step's actions, rewards, dones and observation
 *   are identical bit for bit after 3 collections of S = 12 steps, over episodes of 5 bars
 *   with a ruin level that many steps cross (restarts at the window's end and at ruin,
 *   several per env inside one collection), an epsilon annealed across the collections;
 * - a span encoded in chunks of 4 bars equals the one-call encoding bit for bit, and each
 *   row equals the step-by-step encoding of that bar;
 * - the gather writes NaN rows for bars without a row and copies the window ends; the
 *   hand-over copies bars and portfolios and ticks once;
 * - the automatic choice at the R < E x S boundary, and head steps refused step by step;
 * - two trainers, one collecting encode-once and one step by step, give the same learner
 *   parameters, env state and replay after a warm-up and 6 iterations, and the
 *   encode-once iterations copy, allocate and synchronise nothing. */
#include <math.h>

#include "learn/collect_impl.h"
#include "test_train_util.h"
#include "vp_test.h"

enum { E = 9, S = 12, ROUNDS = 3 };

/* The collection test's network: window 3, width 8, Mamba2 on. */
static vp_model_cfg small_model(int F) {
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = F;
    m.window = 3;
    m.hidden = 8;
    m.encoder = VP_ENCODER_MAMBA2;
    m.mamba_state = 2;
    m.mamba_head_dim = 4;
    m.mamba_conv = 2;
    m.head_hidden = 6;
    m.n_atoms = 7;
    m.iqn_cos = 4;
    return m;
}

/* One side of the comparison: its envs, replay and collector over a shared market and model. */
typedef struct side {
    vp_env env;
    vp_replay* rp;
    vp_collector c;
} side;

typedef struct fixture {
    vp_backend* b;
    vp_train_data d;
    vp_tensor feats;
    vp_env_market m;
    vp_model model;
    vp_instrument inst;
    vp_env_config ec;
    vp_replay_cfg rc;
    int ok;
} fixture;

static void fixture_init(fixture* f) {
    vp_config cfg;
    memset(f, 0, sizeof *f);
    CHECK_OK(vp_backend_cpu_init(&f->b));
    if (!f->b || !vpt_train_cfg(&cfg, 0, NULL) || vp_train_data_load(&f->d, &cfg) != VP_OK) {
        CHECK(0, "set-up: %s", vp_last_error());
        return;
    }
    const int64_t T = f->d.bars.n;
    f->feats = vp_tensor_2d(f->d.features, VP_F32, VP_MEM_HOST, T, f->d.n_features);
    vp_env_market_desc md = {T, f->d.bars.open, f->d.bars.high, f->d.bars.low, f->d.bars.close, f->d.atr,
                             f->d.split.train.begin, f->d.split.train.end, &f->feats, f->d.bars.spread, 0.0,
                             f->d.periods_per_year};
    vp_model_cfg mc = small_model(f->d.n_features);
    f->inst = vpt_instrument_emini();
    f->inst.tick_size = 0.01, f->inst.multiplier = 10, f->inst.max_position = 30, f->inst.initial_equity = 2000;
    f->ec = vp_env_config_default();
    f->ec.episode_bars = 5;        /* window ends inside every collection, several per env */
    f->ec.ruin_fraction = 0.998;   /* a loss of 0.2 % ends the episode: ruin restarts at any step */
    f->rc = vp_replay_cfg_default();
    f->rc.capacity = 257, f->rc.n_envs = E;
    CHECK_OK(vp_env_market_init(&f->m, f->b, &md));
    CHECK_OK(vp_model_init(&f->model, f->b, &mc, 21));
    f->ok = f->m.bars != NULL && f->model.params.data != NULL;
}

static void fixture_free(fixture* f) {
    vp_model_free(&f->model);
    vp_env_market_free(&f->m);
    vp_train_data_free(&f->d);
    vp_backend_free(f->b);
}

static int side_init(side* s, fixture* f, vp_collect_mode mode) {
    memset(s, 0, sizeof *s);
    vp_collect_cfg cc = {1.0f, 0.05f, 30, 5, S, mode}; /* epsilon anneals over the 36 steps' first 30 */
    const vp_policy pol = vp_model_policy(&f->model, &f->model.params);
    CHECK_OK(vp_env_init(&s->env, f->b, &f->m, &f->inst, &f->ec, E));
    CHECK_OK(vp_replay_init(&s->rp, f->b, &f->rc));
    CHECK_OK(vp_collector_init(&s->c, f->b, &pol, &f->feats, &s->env, s->rp, &cc));
    return s->rp != NULL && s->c.work != NULL;
}

static void side_free(side* s) {
    vp_collector_free(&s->c);
    vp_replay_free(s->rp);
    vp_env_free(&s->env);
}

/* Every byte of two tensors of the same shape in host memory. */
static int same(const vp_tensor* a, const vp_tensor* b) {
    return vp_tensor_bytes(a) == vp_tensor_bytes(b) && memcmp(a->data, b->data, vp_tensor_bytes(a)) == 0;
}

static void test_equal_to_single_steps(void) {
    fixture f;
    fixture_init(&f);
    side a, o;
    if (!f.ok || !side_init(&a, &f, VP_COLLECT_STEPWISE) || !side_init(&o, &f, VP_COLLECT_ENCODE_ONCE)) {
        fixture_free(&f);
        return;
    }
    CHECK(a.c.encode_once == 0 && o.c.encode_once == 1, "paths: %d %d", a.c.encode_once, o.c.encode_once);
    CHECK(o.c.span_begin == f.m.begin && o.c.span_rows == f.m.end - 1 - f.m.begin,
          "span [%lld, +%lld) of the market [%lld, %lld)", (long long)o.c.span_begin, (long long)o.c.span_rows,
          (long long)f.m.begin, (long long)f.m.end);
    // The reference, one step at a time; counts the restarts it crosses.
    int window_ends = 0, ruins = 0, twice = 0;
    for (int r = 0; r < ROUNDS; ++r) {
        int resets[E] = {0};
        for (int k = 0; k < S; ++k) {
            int32_t bar0[E];
            memcpy(bar0, a.c.obs_bar.data, sizeof bar0);
            CHECK_OK(vp_collector_step(&a.c));
            const float* dn = (const float*)a.c.done.data;
            const int32_t* we = (const int32_t*)a.c.window_end.data;
            for (int i = 0; i < E; ++i) {
                if (dn[i] == 0.0f) continue;
                resets[i] += 1;
                if (bar0[i] + 1 >= we[i])
                    window_ends += 1;
                else
                    ruins += 1;
            }
        }
        for (int i = 0; i < E; ++i) twice += resets[i] >= 2;
        CHECK_OK(vp_collector_collect(&o.c));
    }
    printf("  %d window ends, %d ruins, %d env-collections with two or more restarts\n", window_ends, ruins, twice);
    CHECK(window_ends > 0 && ruins > 0 && twice > 0, "the case must restart at window ends (%d) and at ruin (%d)",
          window_ends, ruins);
    // Env state, last step's buffers, counters, epsilon: the same bits.
    CHECK(a.env.storage.bytes == o.env.storage.bytes &&
              memcmp(a.env.storage.dev, o.env.storage.dev, a.env.storage.bytes) == 0,
          "env state differs");
    CHECK(same(&a.c.actions, &o.c.actions) && same(&a.c.reward, &o.c.reward) && same(&a.c.done, &o.c.done) &&
              same(&a.c.obs_bar, &o.c.obs_bar) && same(&a.c.portfolio, &o.c.portfolio),
          "the last step's actions, rewards, dones or observation differ");
    int64_t ka = -1, ko = -2;
    CHECK_OK(vp_collector_get_step(&a.c, &ka));
    CHECK_OK(vp_collector_get_step(&o.c, &ko));
    CHECK(ka == ROUNDS * S && ko == ka, "step counters %lld and %lld (want %d)", (long long)ka, (long long)ko,
          ROUNDS * S);
    CHECK(vp_collect_epsilon(&o.c.cfg, ko) == 0.05f,
          "epsilon after %lld steps: %g", (long long)ko, (double)vp_collect_epsilon(&o.c.cfg, ko));
    // The replay: every field and every counter.
    vp_replay_fields fa, fo;
    CHECK_OK(vp_replay_fields_get(a.rp, &fa));
    CHECK_OK(vp_replay_fields_get(o.rp, &fo));
    const vp_tensor* ta[10] = {&fa.bar_idx, &fa.next_bar_idx, &fa.window_end, &fa.portfolio, &fa.next_portfolio,
                               &fa.action, &fa.reward, &fa.discount, &fa.done, &fa.priority};
    const vp_tensor* to[10] = {&fo.bar_idx, &fo.next_bar_idx, &fo.window_end, &fo.portfolio, &fo.next_portfolio,
                               &fo.action, &fo.reward, &fo.discount, &fo.done, &fo.priority};
    for (int k = 0; k < 10; ++k) CHECK(same(ta[k], to[k]), "replay field %d differs", k);
    vp_replay_stats sa, so;
    CHECK_OK(vp_replay_stats_read(a.rp, &sa));
    CHECK_OK(vp_replay_stats_read(o.rp, &so));
    // field by field: the struct's padding bytes are not part of what it says
    const int same_counters = sa.size == so.size && sa.head == so.head && sa.pushes == so.pushes &&
                              sa.emitted == so.emitted && sa.sample_step == so.sample_step &&
                              memcmp(&sa.max_priority, &so.max_priority, sizeof sa.max_priority) == 0 &&
                              memcmp(&sa.beta, &so.beta, sizeof sa.beta) == 0 &&
                              memcmp(&sa.total, &so.total, sizeof sa.total) == 0;
    CHECK(same_counters && so.pushes == ROUNDS * S && so.size > 0,
          "replay counters: pushes %lld / %lld, size %lld / %lld", (long long)sa.pushes, (long long)so.pushes,
          (long long)sa.size, (long long)so.size);
    side_free(&a), side_free(&o);
    fixture_free(&f);
}

static void test_span_chunks_and_rows(void) {
    fixture f;
    fixture_init(&f);
    side o, k;
    if (!f.ok || !side_init(&o, &f, VP_COLLECT_ENCODE_ONCE) || !side_init(&k, &f, VP_COLLECT_ENCODE_ONCE)) {
        fixture_free(&f);
        return;
    }
    const int64_t R = o.c.span_rows, H = f.model.cfg.hidden;
    CHECK(o.c.chunk == R && o.c.span_work != NULL, "one chunk of %lld rows (chunk %lld)", (long long)R,
          (long long)o.c.chunk);
    k.c.chunk = 4; /* R / 4 calls and a shorter last one */
    CHECK_OK(vp_collector_encode_span(&o.c));
    CHECK_OK(vp_collector_encode_span(&k.c));
    CHECK(same(&o.c.span_enc, &k.c.span_enc), "a span encoded in chunks of 4 differs from one call");
    // Rows against an independent encoding of a few bars (first, inner, last) in a batch of 3.
    vp_model_acts* ref = NULL;
    CHECK_OK(vp_model_acts_init(&ref, &f.model, 3, 0, 0));
    int32_t bars[3] = {(int32_t)f.m.begin, (int32_t)(f.m.begin + R / 2), (int32_t)(f.m.begin + R - 1)};
    vp_tensor bt = vp_tensor_1d(bars, VP_I32, VP_MEM_HOST, 3);
    CHECK_OK(vp_model_encode(&f.model, &f.model.params, ref, &f.feats, &bt, 3));
    const float* want = (const float*)vp_model_encoding(ref).data;
    const float* tab = (const float*)o.c.span_enc.data;
    for (int j = 0; j < 3; ++j)
        CHECK(memcmp(want + j * H, tab + (bars[j] - f.m.begin) * H, (size_t)H * 4) == 0, "row of bar %d differs",
              bars[j]);
    // The gather: rows at the envs' bars, NaN for a bar before the span and one past it.
    int32_t gb[3] = {bars[1], (int32_t)f.m.begin - 1, (int32_t)(f.m.begin + R)};
    float out[3 * 8];
    vp_tensor gbt = vp_tensor_1d(gb, VP_I32, VP_MEM_HOST, 3), ot = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, 3, H);
    int32_t ws[3] = {5, 6, 7}, wd[3] = {0, 0, 0};
    vp_tensor wst = vp_tensor_1d(ws, VP_I32, VP_MEM_HOST, 3), wdt = vp_tensor_1d(wd, VP_I32, VP_MEM_HOST, 3);
    CHECK_OK(vp_collect_gather(f.b, &o.c.span_enc, f.m.begin, &gbt, &ot, &wst, &wdt));
    CHECK(wd[0] == 5 && wd[1] == 6 && wd[2] == 7, "window ends copied: %d %d %d", wd[0], wd[1], wd[2]);
    CHECK(memcmp(out, want + H, (size_t)H * 4) == 0, "gathered row differs");
    int nans = 0;
    for (int j = H; j < 3 * H; ++j) nans += isnan(out[j]) != 0;
    CHECK(nans == 2 * H, "%d of %lld elements outside the span are NaN", nans, (long long)(2 * H));
    vp_tensor o7 = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, 3, 7);
    CHECK_STATUS(vp_collect_gather(f.b, &o.c.span_enc, f.m.begin, &gbt, &o7, NULL, NULL), VP_ERR_SHAPE, "out");
    CHECK_STATUS(vp_collect_gather(f.b, &o.c.span_enc, f.m.begin, &gbt, &ot, &wst, NULL), VP_ERR_INVALID_ARG,
                 "both");
    // The hand-over: bars and portfolios copied, the counter advanced once.
    int32_t nb[2] = {11, 12}, ob[2] = {0, 0};
    float np[16], op[16];
    int64_t ctr[1] = {41};
    for (int j = 0; j < 16; ++j) np[j] = 0.5f * (float)j, op[j] = -1.0f;
    vp_tensor nbt = vp_tensor_1d(nb, VP_I32, VP_MEM_HOST, 2), obt = vp_tensor_1d(ob, VP_I32, VP_MEM_HOST, 2);
    vp_tensor npt = vp_tensor_2d(np, VP_F32, VP_MEM_HOST, 2, 8), opt = vp_tensor_2d(op, VP_F32, VP_MEM_HOST, 2, 8);
    vp_tensor ct = vp_tensor_1d(ctr, VP_I32, VP_MEM_HOST, 2);
    CHECK_OK(vp_collect_handover(f.b, &nbt, &npt, &obt, &opt, &ct));
    CHECK(ob[0] == 11 && ob[1] == 12 && memcmp(np, op, sizeof np) == 0 && ctr[0] == 42, "hand-over: %d %d, step %lld",
          ob[0], ob[1], (long long)ctr[0]);
    // The hand-over and the next gather in one call: the same as the two calls (an inner bar and
    // one before the span, whose row is NaN)
    nb[0] = bars[1], nb[1] = (int32_t)f.m.begin - 1, ob[0] = ob[1] = 0;
    for (int j = 0; j < 16; ++j) op[j] = -1.0f;
    float out2[2 * 8], want2[2 * 8];
    int32_t wd2[2] = {0, 0}, ww2[2] = {0, 0};
    vp_tensor o2t = vp_tensor_2d(out2, VP_F32, VP_MEM_HOST, 2, H), w2t = vp_tensor_2d(want2, VP_F32, VP_MEM_HOST, 2, H);
    vp_tensor ws2 = vp_tensor_1d(ws, VP_I32, VP_MEM_HOST, 2), wd2t = vp_tensor_1d(wd2, VP_I32, VP_MEM_HOST, 2);
    vp_tensor ww2t = vp_tensor_1d(ww2, VP_I32, VP_MEM_HOST, 2);
    CHECK_OK(vp_collect_handover_gather(f.b, &nbt, &npt, &obt, &opt, &ct, &o.c.span_enc, f.m.begin, &o2t, &ws2, &wd2t));
    CHECK(ob[0] == nb[0] && ob[1] == nb[1] && memcmp(np, op, sizeof np) == 0 && ctr[0] == 43,
          "hand-over + gather: bars %d %d, step %lld", ob[0], ob[1], (long long)ctr[0]);
    CHECK_OK(vp_collect_gather(f.b, &o.c.span_enc, f.m.begin, &nbt, &w2t, &ws2, &ww2t));
    CHECK(memcmp(out2, want2, sizeof out2) == 0, "hand-over + gather: rows differ from the gather's");
    CHECK(memcmp(wd2, ww2, sizeof wd2) == 0 && wd2[0] == 5 && wd2[1] == 6, "hand-over + gather: window ends %d %d",
          wd2[0], wd2[1]);
    CHECK(isnan(out2[H]), "hand-over + gather: a bar before the span gives NaN");
    CHECK_STATUS(vp_collect_handover_gather(f.b, &nbt, &npt, &obt, &opt, &ct, &o.c.span_enc, f.m.begin, &o7, NULL,
                                            NULL),
                 VP_ERR_SHAPE, "out");
    CHECK(ctr[0] == 43, "a refused hand-over + gather moved the counter (%lld)", (long long)ctr[0]);
    vp_model_acts_free(ref);
    side_free(&o), side_free(&k);
    fixture_free(&f);
}

static void test_choice(void) {
    fixture f;
    fixture_init(&f);
    if (!f.ok) {
        fixture_free(&f);
        return;
    }
    const vp_policy pol = vp_model_policy(&f.model, &f.model.params);
    const int64_t R = f.m.end - 1 - f.m.begin;
    vp_env env;
    CHECK_OK(vp_env_init(&env, f.b, &f.m, &f.inst, &f.ec, E));
    // AUTO encodes once exactly when R < E x S: S = floor(R / E) is step by step, one more is not.
    const int64_t at = R / E;
    struct { int64_t steps; vp_collect_mode mode; int want; } cases[] = {
        {at, VP_COLLECT_AUTO, 0}, {at + 1, VP_COLLECT_AUTO, 1}, {0, VP_COLLECT_AUTO, 0},
        {at + 1, VP_COLLECT_STEPWISE, 0}, {1, VP_COLLECT_ENCODE_ONCE, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        vp_collector c;
        vp_collect_cfg cc = {0.0f, 0.0f, 0, 1, cases[k].steps, cases[k].mode};
        CHECK_OK(vp_collector_init(&c, f.b, &pol, &f.feats, &env, NULL, &cc));
        CHECK(c.encode_once == cases[k].want, "case %zu: R %lld, E %d, S %lld, mode %d: encode_once %d", k,
              (long long)R, E, (long long)cases[k].steps, (int)cases[k].mode, c.encode_once);
        if (!c.encode_once) CHECK_STATUS(vp_collector_head_step(&c), VP_ERR_STATE, "encode once");
        vp_collector_free(&c);
    }
    // S = 0 collects nothing on either path.
    vp_collector c;
    vp_collect_cfg z = {0.0f, 0.0f, 0, 1, 0, VP_COLLECT_ENCODE_ONCE};
    int64_t step = -1;
    CHECK_OK(vp_collector_init(&c, f.b, &pol, &f.feats, &env, NULL, &z));
    CHECK_OK(vp_collector_collect(&c));
    CHECK_OK(vp_collector_get_step(&c, &step));
    CHECK(step == 0, "S = 0 took %lld steps", (long long)step);
    vp_collector_free(&c);
    vp_collect_cfg bad = {0.0f, 0.0f, 0, 1, -1, VP_COLLECT_AUTO};
    CHECK_STATUS(vp_collector_init(&c, f.b, &pol, &f.feats, &env, NULL, &bad), VP_ERR_INVALID_ARG, "steps");
    vp_env_free(&env);
    fixture_free(&f);
}

/* A trainer of the test config with 40 envs and 24 collection steps per iteration (E x S = 960
 * windows against the span's bars: the encode-once path). */
static int trainer(vp_trainer* t, vp_train_data* d) {
    vp_config cfg;
    const char* over[] = {"env.n_envs=40", "train.collect_steps=24", "train.train_steps=2", "env.episode_bars=7",
                          "replay.warmup=120"};
    if (!vpt_train_cfg(&cfg, 5, over) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    vp_backend* b = NULL;
    if (vp_backend_cpu_init(&b) != VP_OK || vp_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        return 0;
    }
    return 1;
}

static void test_trainers_agree(void) {
    vp_trainer to, ts;
    vp_train_data d1, d2;
    if (!trainer(&to, &d1) || !trainer(&ts, &d2)) return;
    CHECK(to.collector.encode_once == 1, "the config must take the encode-once path (R %lld)",
          (long long)(to.market.end - 1 - to.market.begin));
    // The second trainer's collector, step by step (the envs restart as at init).
    vp_collect_cfg cc = ts.parts.collect;
    cc.mode = VP_COLLECT_STEPWISE;
    const vp_policy pol = vp_model_policy(&ts.learner.model, &ts.learner.model.params);
    vp_collector_free(&ts.collector);
    CHECK_OK(vp_collector_init(&ts.collector, ts.backend, &pol, &ts.features, &ts.env, ts.replay, &cc));
    CHECK(ts.collector.encode_once == 0, "step-by-step collector");
    CHECK_OK(vp_trainer_warmup(&to));
    CHECK_OK(vp_trainer_warmup(&ts));
    CHECK_OK(vp_trainer_iterate(&to, 1));
    vp_runtime_counters c0, c1;
    vp_backend_counters(to.backend, &c0);
    CHECK_OK(vp_trainer_iterate(&to, 5));
    vp_backend_counters(to.backend, &c1);
    CHECK(c1.copies == c0.copies && c1.allocs == c0.allocs && c1.syncs == c0.syncs,
          "5 encode-once iterations: copies +%lld, allocs +%lld, syncs +%lld", (long long)(c1.copies - c0.copies),
          (long long)(c1.allocs - c0.allocs), (long long)(c1.syncs - c0.syncs));
    CHECK_OK(vp_trainer_iterate(&ts, 6));
    CHECK(same(&to.learner.model.params, &ts.learner.model.params), "learner parameters differ after 6 iterations");
    CHECK(memcmp(to.env.storage.dev, ts.env.storage.dev, to.env.storage.bytes) == 0, "env state differs");
    vp_replay_fields fa, fb;
    CHECK_OK(vp_replay_fields_get(to.replay, &fa));
    CHECK_OK(vp_replay_fields_get(ts.replay, &fb));
    CHECK(same(&fa.reward, &fb.reward) && same(&fa.action, &fb.action) && same(&fa.bar_idx, &fb.bar_idx) &&
              same(&fa.priority, &fb.priority),
          "replay differs");
    vp_backend* b1 = to.backend;
    vp_backend* b2 = ts.backend;
    vp_trainer_free(&to), vp_trainer_free(&ts);
    vp_backend_free(b1), vp_backend_free(b2);
    vp_train_data_free(&d1), vp_train_data_free(&d2);
}

int main(void) {
    RUN_TEST(test_equal_to_single_steps);
    RUN_TEST(test_span_chunks_and_rows);
    RUN_TEST(test_choice);
    RUN_TEST(test_trainers_agree);
    return vpt_finish();
}
