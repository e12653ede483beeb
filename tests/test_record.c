/* Tests of recording (vulpes/record.h): the rows of a recording equal an env stepped here by
 * hand with the backend's own random actions; ma_cross's decisions worked out by hand on a
 * tiny bar series and, over a recording, by its definition at every recorded bar; the logp of
 * the random behaviour and of epsilon mixtures; the same seed writes the same file bytes (and
 * another seed another file); behaviour specs parsed and refused; a checkpoint's greedy policy
 * scored here by hand against its recorded actions; the job's refusals (they write nothing);
 * a dataset refused against other data. */
#include <math.h>

#include "test_record_util.h"
#include "vp_test.h"

static char g_dir[512];

/* g_dir/name into out[n]. */
static const char* path_of(char* out, size_t n, const char* name) {
    snprintf(out, n, "%s/%s", g_dir, name);
    return out;
}

/* The random behaviour over 7 steps of 3 envs with 3-bar episodes, against an env stepped
 * here: actions from vp_env_random_actions, every reward, end, bar and portfolio bit for bit. */
static void test_hand_stepped(void) {
    vp_train_data d;
    vp_config cfg;
    if (!vpt_record_data(&d, &cfg, 0, NULL)) return;
    vp_record_cfg c;
    if (!vpt_record_cfg(&d, &cfg, 7, 3, 99, 3, &c)) return;
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("random", &beh));
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_offline_data r;
    CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
    CHECK_OK(vp_offline_check(&r, "recorded"));
    CHECK(strcmp(r.behaviour, "random") == 0 && r.seed == 99 && r.span.begin == d.split.train.begin &&
              r.span.end == d.split.train.end && r.data.kind == VP_DATA_SYNTHETIC && r.data.n_bars == d.bars.n,
          "behaviour %s seed %llu span [%lld, %lld)", r.behaviour, (unsigned long long)r.seed,
          (long long)r.span.begin, (long long)r.span.end);

    // the same envs by hand
    enum { E = 3 };
    vp_env_market m;
    vp_env e;
    memset(&m, 0, sizeof m);
    memset(&e, 0, sizeof e);
    vp_env_market_desc md = {d.bars.n, d.bars.open, d.bars.high, d.bars.low, d.bars.close, d.atr,
                             c.span.begin, c.span.end, NULL, d.bars.spread, vp_instrument_spread(&c.instrument),
                             d.periods_per_year};
    CHECK_OK(vp_env_market_init(&m, b, &md));
    CHECK_OK(vp_env_init(&e, b, &m, &c.instrument, &c.env, E));
    int32_t act[E * 4], obs[E];
    float rew[E], done[E], pf[E * 8];
    vp_tensor ta = vp_tensor_2d(act, VP_I32, VP_MEM_HOST, E, 4), to = vp_tensor_1d(obs, VP_I32, VP_MEM_HOST, E);
    vp_tensor tr = vp_tensor_1d(rew, VP_F32, VP_MEM_HOST, E), td = vp_tensor_1d(done, VP_F32, VP_MEM_HOST, E);
    vp_tensor tp = vp_tensor_2d(pf, VP_F32, VP_MEM_HOST, E, 8);
    CHECK_OK(vp_env_reset(&e, &to, &tp));
    CHECK(memcmp(obs, r.bar, sizeof obs) == 0 && memcmp(pf, r.portfolio, sizeof pf) == 0, "row 0 differs");
    int ends = 0;
    const float lp = (float)-log(108.0);
    for (int t = 0; t < 7; ++t) {
        CHECK_OK(vp_env_random_actions(b, 99, (uint64_t)t, &ta));
        CHECK(memcmp(act, r.action + t * E * 4, sizeof act) == 0, "step %d: the actions differ", t);
        CHECK_OK(vp_env_step(&e, &ta, &tr, &td, &to, &tp));
        CHECK(memcmp(rew, r.reward + t * E, sizeof rew) == 0, "step %d: rewards differ", t);
        CHECK(memcmp(done, r.done + t * E, sizeof done) == 0, "step %d: dones differ", t);
        CHECK(memcmp(obs, r.bar + (t + 1) * E, sizeof obs) == 0, "step %d: next bars differ", t);
        CHECK(memcmp(pf, r.portfolio + (t + 1) * E * 8, sizeof pf) == 0, "step %d: next portfolios differ", t);
        for (int i = 0; i < E; ++i) {
            ends += done[i] == 1.0f;
            CHECK(r.logp[t * E + i] == lp, "logp of row %d env %d: %g, expected -log 108 = %g", t, i,
                  (double)r.logp[t * E + i], (double)lp);
        }
    }
    // 3-bar episodes end at steps 2 and 5 of every env: the restarts are in the rows
    CHECK(ends == 2 * E, "%d episode ends, expected %d", ends, 2 * E);
    const vp_record_totals tot = vp_record_totals_of(&r);
    double sum = 0.0;
    for (int k = 0; k < 7 * E; ++k) sum += r.reward[k];
    CHECK(tot.rows == 7 * E && tot.episodes == 2 * E && tot.mean_reward == sum / (7 * E), "totals %lld %lld %g",
          (long long)tot.rows, (long long)tot.episodes, tot.mean_reward);
    vp_env_free(&e);
    vp_env_market_free(&m);
    vp_offline_free(&r);
    vp_backend_free(b);
    vp_train_data_free(&d);
}

/* ma_cross(fast 2, slow 3) on closes 10 11 12 11 10 9 10 12 14 13, worked out by hand: flat,
 * flat (fewer than 3 bars), long (11.5 > 11), long (11.5 > 11.33), short (10.5 < 11), short
 * (9.5 < 10), short (9.5 < 9.67), long (11 > 10.33), long (13 > 12), long (13.5 > 13); equal
 * averages are flat. */
static void test_ma_cross_hand(void) {
    const double close[10] = {10, 11, 12, 11, 10, 9, 10, 12, 14, 13};
    const int want[10] = {1, 1, 2, 2, 0, 0, 0, 2, 2, 2};
    for (int t = 0; t < 10; ++t)
        CHECK(vp_ma_cross_dir(close, t, 2, 3) == want[t], "bar %d: direction %d, expected %d", t,
              vp_ma_cross_dir(close, t, 2, 3), want[t]);
    const double flat[4] = {5, 5, 5, 5};
    CHECK(vp_ma_cross_dir(flat, 3, 1, 4) == VP_ENV_DIR_FLAT, "equal averages are flat");
    CHECK(VP_ENV_DIR_SHORT == 0 && VP_ENV_DIR_FLAT == 1 && VP_ENV_DIR_LONG == 2, "direction order");
}

/* A recording of ma_cross(5, 20, size 1): every action is the crossover's at its bar with size
 * 1 and no levels, logp 0; with epsilon 0.25 about a quarter of the actions are replaced,
 * each row's logp the mixture's. */
static void test_ma_cross_recorded(void) {
    vp_train_data d;
    vp_config cfg;
    if (!vpt_record_data(&d, &cfg, 0, NULL)) return;
    vp_record_cfg c;
    if (!vpt_record_cfg(&d, &cfg, 50, 8, 5, 0, &c)) return;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("ma_cross:fast=5,slow=20,size=1", &beh));
    vp_offline_data r;
    CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
    int longs = 0, shorts = 0;
    for (int64_t k = 0; k < 50 * 8; ++k) {
        const int32_t* a = r.action + k * 4;
        const int dir = vpt_ma_dir(d.bars.close, r.bar[k], 5, 20);
        CHECK(a[0] == dir && a[1] == 1 && a[2] == 0 && a[3] == 0 && r.logp[k] == 0.0f,
              "row %lld: action %d %d %d %d logp %g, expected direction %d size 1", (long long)k, a[0], a[1], a[2],
              a[3], (double)r.logp[k], dir);
        longs += a[0] == 2;
        shorts += a[0] == 0;
    }
    CHECK(longs > 0 && shorts > 0, "the trend market gives both directions: %d long, %d short", longs, shorts);
    vp_offline_free(&r);

    // epsilon 0.25: a replaced action has logp log(0.25 / 108), the crossover's log(0.25 / 108 + 0.75)
    CHECK_OK(vp_behaviour_set_epsilon(&beh, 0.25));
    CHECK(strcmp(beh.name, "ma_cross:fast=5,slow=20,size=1,epsilon=0.25") == 0, "name %s", beh.name);
    CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
    const float lp_own = (float)log(0.25 / 108 + 0.75), lp_other = (float)log(0.25 / 108);
    int replaced = 0;
    for (int64_t k = 0; k < 50 * 8; ++k) {
        const int32_t* a = r.action + k * 4;
        const int own = a[0] == vpt_ma_dir(d.bars.close, r.bar[k], 5, 20) && a[1] == 1 && a[2] == 0 && a[3] == 0;
        replaced += !own;
        CHECK(r.logp[k] == (own ? lp_own : lp_other), "row %lld: logp %g, expected %g", (long long)k,
              (double)r.logp[k], (double)(own ? lp_own : lp_other));
    }
    // 400 draws of probability 0.25 (less the 1 in 108 that repeat the crossover): 99 +- 9
    CHECK(replaced >= 60 && replaced <= 140, "%d of 400 actions replaced under epsilon 0.25", replaced);
    vp_offline_free(&r);
    vp_backend_free(b);
    vp_train_data_free(&d);
}

/* The copies a recording makes (counted by the backend as on CUDA): as many for 3 envs as for
 * 301, and 5 more per extra step (two downloads of the observations, the actions' upload, the
 * rewards' and ends' downloads), never one per env. */
static void test_copies(void) {
    vp_train_data d;
    vp_config cfg;
    if (!vpt_record_data(&d, &cfg, 0, NULL)) return;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("ma_cross:fast=2,slow=6,epsilon=0.5", &beh));
    const int64_t sizes[3][2] = {{10, 3}, {10, 301}, {17, 301}};
    int64_t copies[3];
    for (int k = 0; k < 3; ++k) {
        vp_record_cfg c;
        if (!vpt_record_cfg(&d, &cfg, sizes[k][0], sizes[k][1], 2, 4, &c)) return;
        vp_runtime_counters before, after;
        vp_backend_counters(b, &before);
        vp_offline_data r;
        CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
        vp_backend_counters(b, &after);
        copies[k] = after.copies - before.copies;
        vp_offline_free(&r);
    }
    CHECK(copies[0] == copies[1], "%lld copies for 3 envs, %lld for 301", (long long)copies[0], (long long)copies[1]);
    CHECK(copies[2] - copies[1] == 7 * 5, "%lld copies more for 7 more steps, expected 35",
          (long long)(copies[2] - copies[1]));
    vp_backend_free(b);
    vp_train_data_free(&d);
}

/* The logp of one action: uniform, deterministic, mixtures. */
static void test_logp(void) {
    const int32_t own[4] = {2, 3, 0, 0}, other[4] = {2, 3, 0, 1};
    CHECK(vp_behaviour_logp(own, other, 0.5, 1) == (float)-log(108.0), "uniform");
    CHECK(vp_behaviour_logp(own, own, 0.0, 0) == 0.0f, "deterministic");
    CHECK(vp_behaviour_logp(own, own, 0.1, 0) == (float)log(0.1 / 108 + 0.9), "mixture, own action");
    CHECK(vp_behaviour_logp(own, other, 0.1, 0) == (float)log(0.1 / 108), "mixture, other action");
    CHECK(vp_behaviour_logp(own, other, 1.0, 0) == (float)-log(108.0), "epsilon 1 is uniform");
}

/* Specs: canonical names, and every bad one refused naming what is wrong. */
static void test_parse(void) {
    vp_behaviour b;
    CHECK_OK(vp_behaviour_parse("ma_cross:slow=20,fast=5", &b));
    CHECK(b.kind == VP_BEHAVIOUR_MA_CROSS && b.fast == 5 && b.slow == 20 && b.size == 3 && b.epsilon == 0.0 &&
              strcmp(b.name, "ma_cross:fast=5,slow=20,size=3") == 0,
          "parsed %s", b.name);
    CHECK_OK(vp_behaviour_parse("random:epsilon=0.1", &b));
    CHECK(b.kind == VP_BEHAVIOUR_RANDOM && b.epsilon == 0.1 && strcmp(b.name, "random:epsilon=0.1") == 0, "%s",
          b.name);
    CHECK_STATUS(vp_behaviour_set_epsilon(&b, 0.2), VP_ERR_INVALID_ARG, "already has epsilon 0.1");
    CHECK_OK(vp_behaviour_set_epsilon(&b, 0.1));
    CHECK_OK(vp_behaviour_set_epsilon(&b, 0.0));
    CHECK(b.epsilon == 0.1 && strcmp(b.name, "random:epsilon=0.1") == 0, "epsilon 0 changed %s", b.name);
    CHECK_OK(vp_behaviour_parse("random", &b));
    CHECK_OK(vp_behaviour_set_epsilon(&b, 1.0 / 3.0));
    CHECK(strcmp(b.name, "random:epsilon=0.33333333333333331") == 0, "%s", b.name);
    const char* bad[][2] = {
        {"randomly", "unknown name 'randomly'"},
        {"ma_cross", "ma_cross needs fast=N and slow=M"},
        {"ma_cross:fast=5", "ma_cross needs fast=N and slow=M"},
        {"ma_cross:fast=20,slow=5", "fast=20 must be below slow=5"},
        {"ma_cross:fast=5,slow=20,size=4", "size=4 is not a whole number in 0..3"},
        {"ma_cross:fast=x,slow=20", "fast=x is not a whole number"},
        {"ma_cross:fast=5,slow=20,tp=1", "unknown option 'tp' (ma_cross takes fast, slow, size and epsilon)"},
        {"random:fast=3", "unknown option 'fast' (random takes epsilon)"},
        {"random:epsilon=1.5", "epsilon=1.5 is not a probability in 0..1"},
        {"random:epsilon", "option 'epsilon' is not key=value"},
        {"random:", "option '' is not key=value"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k)
        CHECK_STATUS(vp_behaviour_parse(bad[k][0], &b), VP_ERR_INVALID_ARG, bad[k][1]);
}

/* The same seed writes the same bytes; another seed another file. */
static void test_same_seed_same_bytes(void) {
    vp_train_data d;
    vp_config cfg;
    if (!vpt_record_data(&d, &cfg, 0, NULL)) return;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("ma_cross:fast=3,slow=9,epsilon=0.3", &beh));
    char p[3][600];
    const uint64_t seeds[3] = {11, 11, 12};
    for (int k = 0; k < 3; ++k) {
        vp_record_cfg c;
        if (!vpt_record_cfg(&d, &cfg, 40, 5, seeds[k], 0, &c)) return;
        vp_offline_data r;
        CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
        char name[32];
        snprintf(name, sizeof name, "seed%d.safetensors", k);
        CHECK_OK(vp_offline_save(&r, path_of(p[k], sizeof p[k], name)));
        vp_offline_free(&r);
    }
    long n0 = 0, n1 = 0, n2 = 0;
    char *a = vpt_slurp(p[0], &n0), *c1 = vpt_slurp(p[1], &n1), *c2 = vpt_slurp(p[2], &n2);
    CHECK(a && c1 && n0 == n1 && memcmp(a, c1, (size_t)n0) == 0, "seed 11 twice: the files differ");
    CHECK(c2 && !(n2 == n0 && memcmp(a, c2, (size_t)n0) == 0), "seeds 11 and 12 wrote the same file");
    free(a), free(c1), free(c2);
    vp_backend_free(b);
    vp_train_data_free(&d);
}

/* The job with a checkpoint of a short training run: the data from its record, every action
 * the greedy choice of the checkpoint's policy scored here at the recorded observation, logp
 * 0; with epsilon the mixture's logp. */
static void test_checkpoint_behaviour(void) {
    char run[600], ck[700], out[600];
    path_of(run, sizeof run, "run");
    const char* over[] = {"train.iterations=2", "train.eval_every=2", "train.log_every=1", "replay.warmup=40"};
    vp_train_result tr;
    CHECK_OK(vpt_train_run(run, VP_RUN_CREATE, 0, NULL, 4, over, &tr));
    snprintf(ck, sizeof ck, "%s/last.safetensors", run);
    vp_record_job job;
    memset(&job, 0, sizeof job);
    job.checkpoint = ck;
    job.steps = 12;
    job.n_envs = 3;
    job.out = path_of(out, sizeof out, "ck.safetensors");
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_record_report rep;
    CHECK_OK(vp_record_job_run(b, &job, &rep));
    CHECK(rep.checked_against_checkpoint && strncmp(rep.behaviour, "checkpoint:", 11) == 0 &&
              strcmp(rep.span_name, "train") == 0 && rep.totals.rows == 36,
          "report: %s, %s, %lld rows", rep.behaviour, rep.span_name ? rep.span_name : "?",
          (long long)rep.totals.rows);
    vp_offline_data r;
    CHECK_OK(vp_offline_load(out, &r));

    // the checkpoint's policy scored here at every recorded observation
    vp_config cfg;
    vp_data_record rec;
    int has = 0;
    vp_train_data d;
    memset(&d, 0, sizeof d);
    vp_algo algo;
    memset(&algo, 0, sizeof algo);
    CHECK_OK(vp_backtest_checkpoint_config(ck, NULL, 0, "the test", &cfg, &rec, &has));
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_offline_check_data(&r, &d, "the recording"));
    CHECK_OK(vp_algo_create(&algo, &cfg, b, &d, VP_ALGO_INFER));
    CHECK_OK(vp_algo_load_params(&algo, ck, VP_PARAMS_ONLINE));
    vp_policy pol;
    CHECK_OK(vp_algo_policy(&algo, VP_PARAMS_ONLINE, &pol));
    vp_policy_work* w = NULL;
    CHECK_OK(vp_policy_work_init(&pol, 3, &w));
    const vp_action_layout l = vp_action_layout_env();
    for (int t = 0; t < 12 && w; ++t) {
        vp_tensor bars = vp_tensor_1d(r.bar + t * 3, VP_I32, VP_MEM_HOST, 3);
        vp_tensor pf = vp_tensor_2d(r.portfolio + t * 3 * 8, VP_F32, VP_MEM_HOST, 3, 8);
        vp_tensor enc, q;
        CHECK_OK(vp_policy_encode(&pol, w, algo.features, &bars, 3, &enc));
        CHECK_OK(vp_policy_score(&pol, w, &enc, &pf, 3, &q));
        for (int i = 0; i < 3; ++i) {
            int32_t g[4];
            vp_action_greedy(&l, (const float*)q.data + i * l.n_heads, g);
            CHECK(memcmp(g, r.action + (t * 3 + i) * 4, sizeof g) == 0 && r.logp[t * 3 + i] == 0.0f,
                  "step %d env %d: recorded %d %d %d %d, greedy %d %d %d %d", t, i, r.action[(t * 3 + i) * 4],
                  r.action[(t * 3 + i) * 4 + 1], r.action[(t * 3 + i) * 4 + 2], r.action[(t * 3 + i) * 4 + 3], g[0],
                  g[1], g[2], g[3]);
        }
    }
    vp_policy_work_free(&pol, w);
    vp_offline_free(&r);

    // epsilon 0.5: the name says it, every logp is one of the mixture's two values
    job.epsilon = 0.5;
    CHECK_STATUS(vp_record_job_run(b, &job, &rep), VP_ERR_INVALID_ARG, "exists: give --force to replace it");
    job.force = 1;
    CHECK_OK(vp_record_job_run(b, &job, &rep));
    CHECK_OK(vp_offline_load(out, &r));
    char want[800];
    snprintf(want, sizeof want, "checkpoint:%s,epsilon=0.5", ck);
    CHECK(strcmp(r.behaviour, want) == 0, "behaviour %s", r.behaviour);
    const float a = (float)log(0.5 / 108 + 0.5), o = (float)log(0.5 / 108);
    int others = 0;
    for (int k = 0; k < 36; ++k) {
        CHECK(r.logp[k] == a || r.logp[k] == o, "row %d: logp %g", k, (double)r.logp[k]);
        others += r.logp[k] == o;
    }
    CHECK(others > 0 && others < 36, "%d of 36 actions replaced under epsilon 0.5", others);
    vp_offline_free(&r);

    // a config override a checkpoint does not allow
    char* bad_over[] = {"model.hidden=8"};
    job.overrides = bad_over;
    job.n_overrides = 1;
    CHECK_STATUS(vp_record_job_run(b, &job, &rep), VP_ERR_INVALID_ARG, "a recording may change only instrument.*");
    vp_algo_free(&algo);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* Refused jobs write nothing: both behaviours, none, --policy without CONFIG, a CONFIG beside a
 * checkpoint, a bad spec, an existing --out, a bad span or epsilon. */
static void test_job_refusals(void) {
    char out[600], cfg_path[600];
    path_of(out, sizeof out, "refused.safetensors");
    path_of(cfg_path, sizeof cfg_path, "cfg.yaml");
    FILE* f = fopen(cfg_path, "w");
    CHECK(f != NULL, "cannot write %s", cfg_path);
    if (!f) return;
    fputs(VPT_TRAIN_YAML, f);
    fclose(f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_record_report rep;
    struct {
        const char *config, *checkpoint, *policy, *span;
        double epsilon;
        const char* needle;
    } cases[] = {
        {cfg_path, "x.safetensors", "random", NULL, 0, "give one behaviour"},
        {cfg_path, NULL, NULL, NULL, 0, "give one behaviour"},
        {NULL, NULL, "random", NULL, 0, "--policy needs CONFIG"},
        {cfg_path, "x.safetensors", NULL, NULL, 0, "with --checkpoint the config comes from the checkpoint"},
        {cfg_path, NULL, "bogus:x=1", NULL, 0, "behaviour 'bogus:x=1': unknown name 'bogus'"},
        {cfg_path, NULL, "random", "all", 0, "--span 'all' is not train, val or test"},
        {cfg_path, NULL, "random", NULL, 2.0, "--epsilon 2 is not a probability"},
        {cfg_path, NULL, "random:epsilon=0.2", NULL, 0.3, "already has epsilon 0.2"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        vp_record_job job;
        memset(&job, 0, sizeof job);
        job.config = cases[k].config;
        job.checkpoint = cases[k].checkpoint;
        job.policy = cases[k].policy;
        job.span = cases[k].span;
        job.epsilon = cases[k].epsilon;
        job.out = out;
        CHECK_STATUS(vp_record_job_run(b, &job, &rep), VP_ERR_INVALID_ARG, cases[k].needle);
        CHECK(access(out, F_OK) != 0, "case %zu wrote %s", k, out);
    }
    // an existing --out is left as it was
    f = fopen(out, "w");
    if (f) fputs("keep", f), fclose(f);
    vp_record_job job;
    memset(&job, 0, sizeof job);
    job.config = cfg_path;
    job.policy = "random";
    job.out = out;
    job.steps = 3;
    CHECK_STATUS(vp_record_job_run(b, &job, &rep), VP_ERR_INVALID_ARG, "exists: give --force to replace it");
    char* kept = vpt_slurp(out, NULL);
    CHECK(kept && strcmp(kept, "keep") == 0, "the existing --out was changed");
    free(kept);
    // --force replaces it with a dataset of the val span
    job.force = 1;
    job.span = "val";
    CHECK_OK(vp_record_job_run(b, &job, &rep));
    vp_offline_data r;
    CHECK_OK(vp_offline_load(out, &r));
    CHECK(r.steps == 3 && r.n_envs == VP_RECORD_DEFAULT_ENVS && strcmp(rep.span_name, "val") == 0 &&
              r.span.begin == rep.span.begin && rep.seed == 7,
          "steps %lld envs %lld span %s seed %llu", (long long)r.steps, (long long)r.n_envs, rep.span_name,
          (unsigned long long)rep.seed);
    vp_offline_free(&r);
    vp_backend_free(b);
}

/* A dataset of one market refused against another's bars, accepted against its own. */
static void test_other_data(void) {
    vp_train_data d, other;
    vp_config cfg, cfg2;
    const char* over[] = {"data.path=synth:trend:bars=1500,seed=4"};
    if (!vpt_record_data(&d, &cfg, 0, NULL) || !vpt_record_data(&other, &cfg2, 1, over)) return;
    vp_record_cfg c;
    if (!vpt_record_cfg(&d, &cfg, 4, 2, 1, 0, &c)) return;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("random", &beh));
    vp_offline_data r;
    CHECK_OK(vp_record_run(b, &d, NULL, &beh, &c, &r));
    CHECK_OK(vp_offline_check_data(&r, &d, "dataset"));
    CHECK_STATUS(vp_offline_check_data(&r, &other, "dataset"), VP_ERR_INVALID_ARG,
                 "dataset: recorded on synth:trend:bars=1500,seed=3 (1500 bars), not on these bars, "
                 "synth:trend:bars=1500,seed=4 (1500 bars)");
    vp_offline_free(&r);
    vp_backend_free(b);
    vp_train_data_free(&other);
    vp_train_data_free(&d);
}

int main(void) {
    vpt_tmp_dir(g_dir, sizeof g_dir, "record");
    vpt_rm_run(g_dir);
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "cannot create %s\n", g_dir);
        return 1;
    }
    RUN_TEST(test_hand_stepped);
    RUN_TEST(test_ma_cross_hand);
    RUN_TEST(test_ma_cross_recorded);
    RUN_TEST(test_copies);
    RUN_TEST(test_logp);
    RUN_TEST(test_parse);
    RUN_TEST(test_same_seed_same_bytes);
    RUN_TEST(test_checkpoint_behaviour);
    RUN_TEST(test_job_refusals);
    RUN_TEST(test_other_data);
    vpt_rm_run(g_dir);
    return vpt_finish();
}
