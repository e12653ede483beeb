/* IQL's checkpoints and set-up checks (CPU): a resume continues bit for bit (3 iterations, save,
 * load into a fresh trainer, 2 more equal 5 straight: parameters, target, moments); a tampered
 * checkpoint (the draws' counter, the AdamW step), a best checkpoint, one of another config and a
 * PPO one are refused naming what differs; best.safetensors reads back as the inference
 * instance's parameters. A dataset of other bars, one recorded on the validation span, a missing
 * iql.dataset and a switch of the DQN learner are refused before anything is made. Through the
 * training loop (vp_train_run): two runs of one config write the same metrics.jsonl and
 * checkpoints, and 23 iterations, a stop and a resume equal 40 straight. */
#include "test_record_util.h"

#include <math.h>
#include <stdint.h>

#include "learn/iql_impl.h"
#include "vp_test.h"
#include "vulpes/algo.h"
#include "vulpes/ppo.h"

static const char* const OVER[] = {"train.algo=iql", "iql.dataset=unused.safetensors", "iql.batch=16",
                                   "train.train_steps=2"};

/* An IQL trainer with its data and a random behaviour's dataset on its own backend. */
typedef struct rig {
    vp_backend* b;
    vp_config cfg;
    vp_train_data d;
    vp_offline_data ds;
    vp_iql_trainer t;
    int ok;
} rig;

/* The dataset: 40 steps of 3 envs of the random behaviour over span `span` (the training span when 0). */
static int record(const vp_train_data* d, const vp_config* cfg, vp_backend* b, int val_span, vp_offline_data* out) {
    vp_behaviour beh;
    vp_record_cfg c;
    if (vp_behaviour_parse("random", &beh) != VP_OK || !vpt_record_cfg(d, cfg, 40, 3, 5, 30, &c)) return 0;
    if (val_span) c.span = d->split.val;
    return vp_record_run(b, d, NULL, &beh, &c, out) == VP_OK;
}

static int rig_init(rig* r, int n, const char* const* over) {
    memset(r, 0, sizeof *r);
    r->ok = vp_backend_cpu_init(&r->b) == VP_OK && vpt_record_data(&r->d, &r->cfg, n, over) &&
            record(&r->d, &r->cfg, r->b, 0, &r->ds) && vp_iql_trainer_init(&r->t, r->b, &r->cfg, &r->d, &r->ds) == VP_OK;
    CHECK(r->ok, "rig: %s", vp_last_error());
    return r->ok;
}

static void rig_free(rig* r) {
    vp_iql_trainer_free(&r->t);
    vp_offline_free(&r->ds);
    vp_train_data_free(&r->d);
    vp_backend_free(r->b);
}

/* Whether two host tensors hold the same bits. */
static int same(const vp_tensor* a, const vp_tensor* b) {
    return vp_tensor_bytes(a) == vp_tensor_bytes(b) && memcmp(a->data, b->data, vp_tensor_bytes(a)) == 0;
}

static void ctr_bump(vp_iql_trainer* t) { ((int64_t*)t->ctr.data)[0] += 1; }
static void adam_step(vp_iql_trainer* t) { ((int32_t*)t->adam_step.data)[0] = 3; }

static void test_resume_and_tampered(void) {
    char dir[512], path[600], good[600];
    vpt_tmp_dir(dir, sizeof dir, "iqlckpt");
    vpt_rm_run(dir);
    mkdir(dir, 0755);
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    rig a, b, c;
    if (!rig_init(&a, 4, OVER) || !rig_init(&b, 4, OVER) || !rig_init(&c, 4, OVER)) return;
    // 3 iterations, saved; a fresh trainer loads them and runs 2 more; another runs 5 straight
    CHECK_OK(vp_iql_trainer_iterate(&a.t, 3));
    CHECK_OK(vp_iql_trainer_save(&a.t, good, VP_CKPT_RESUME, 1.5, 2));
    double sh = 0.0;
    int64_t it = 0;
    CHECK_OK(vp_iql_trainer_load(&b.t, good, &sh, &it));
    CHECK(b.t.count.iteration == 3 && b.t.count.learner_steps == 6 && sh == 1.5 && it == 2,
          "loaded: iteration %lld, learner steps %lld, best %g at %lld", (long long)b.t.count.iteration,
          (long long)b.t.count.learner_steps, sh, (long long)it);
    CHECK_OK(vp_iql_trainer_iterate(&b.t, 2));
    CHECK_OK(vp_iql_trainer_iterate(&c.t, 5));
    CHECK(same(&b.t.net.params, &c.t.net.params) && same(&b.t.target, &c.t.target) &&
              same(&b.t.adam_m, &c.t.adam_m) && same(&b.t.adam_v, &c.t.adam_v) && same(&b.t.ctr, &c.t.ctr),
          "3 + resume + 2 iterations differ from 5 straight");
    CHECK(!same(&a.t.net.params, &c.t.net.params), "two more iterations changed nothing");
    // the target moved toward the online Q heads, not onto them
    const vp_tensor q = vp_iql_q_range(&c.t.net, &c.t.net.params);
    CHECK(!same(&q, &c.t.target), "the target equals the online Q heads after Polyak steps of 0.005");
    // tampered device state, each named
    static const struct {
        const char* name;
        void (*edit)(vp_iql_trainer*);
        const char* needle;
    } cases[] = {{"draws' counter", ctr_bump, "iql.counters"}, {"adam step", adam_step, "adam.step"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        rig e;
        if (!rig_init(&e, 4, OVER)) break;
        CHECK_OK(vp_iql_trainer_iterate(&e.t, 2));
        cases[k].edit(&e.t);
        snprintf(path, sizeof path, "%s/bad%zu.safetensors", dir, k);
        CHECK_OK(vp_iql_trainer_save(&e.t, path, VP_CKPT_RESUME, NAN, -1));
        const vp_status s = vp_iql_trainer_load(&b.t, path, &sh, &it);
        CHECK(s == VP_ERR_PARSE && strstr(vp_last_error(), cases[k].needle), "%s: status %d, message '%s'",
              cases[k].name, (int)s, vp_last_error());
        rig_free(&e);
    }
    // a best checkpoint, and one of another IQL config, are not this run's resume
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    CHECK_OK(vp_iql_trainer_save(&a.t, path, VP_CKPT_BEST, 1.5, 2));
    CHECK_STATUS(vp_iql_trainer_save(&a.t, path, VP_CKPT_KIND_COUNT, 1.5, 2), VP_ERR_INVALID_ARG,
                 "vp_iql_trainer_save: bad kind 2");
    CHECK_STATUS(vp_iql_trainer_load(&b.t, path, &sh, &it), VP_ERR_PARSE, "not a resume checkpoint");
    static const char* const OTHER[] = {"train.algo=iql", "iql.dataset=unused.safetensors", "iql.batch=16",
                                        "train.train_steps=2", "iql.beta=1"};
    rig o;
    if (rig_init(&o, 5, OTHER)) {
        CHECK_STATUS(vp_iql_trainer_load(&o.t, good, &sh, &it), VP_ERR_INVALID_ARG, "iql.beta was 3");
        rig_free(&o);
    }
    // best.safetensors: the inference instance reads the best parameters (here the initial ones)
    vp_algo inf;
    memset(&inf, 0, sizeof inf);
    CHECK_OK(vp_algo_create(&inf, &a.cfg, a.b, &a.d, VP_ALGO_INFER));
    if (inf.impl) {
        CHECK_OK(vp_algo_load_params(&inf, path, VP_PARAMS_ONLINE));
        vp_policy pol;
        CHECK_OK(vp_algo_policy(&inf, VP_PARAMS_ONLINE, &pol));
        CHECK(same(pol.params, &a.t.best_params), "best.safetensors read back differs from the best parameters");
    }
    vp_algo_free(&inf);
    // a PPO network's parameters are no IQL network's
    static const char* const PPO[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=1"};
    vp_config pc;
    vp_ppo_trainer pt;
    if (vpt_train_cfg(&pc, 4, PPO) && vp_ppo_trainer_init(&pt, a.b, &pc, &a.d) == VP_OK) {
        snprintf(path, sizeof path, "%s/ppo.safetensors", dir);
        CHECK_OK(vp_ppo_trainer_save(&pt, path, VP_CKPT_BEST, NAN, -1));
        CHECK_STATUS(vp_iql_read_params(a.b, &a.t.net, path, &a.t.best_params), VP_ERR_PARSE, "holds no IQL network");
        vp_ppo_trainer_free(&pt);
    }
    rig_free(&a), rig_free(&b), rig_free(&c);
    vpt_rm_run(dir);
}

static void test_refused_datasets(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    vp_offline_data ds;
    vp_iql_trainer t;
    memset(&ds, 0, sizeof ds);
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_record_data(&d, &cfg, 4, OVER)) return;
    // recorded on the validation span: it would leak the bars validation scores
    CHECK(record(&d, &cfg, b, 1, &ds), "recording on the validation span: %s", vp_last_error());
    CHECK_STATUS(vp_iql_trainer_init(&t, b, &cfg, &d, &ds), VP_ERR_INVALID_ARG, "leave the run's training span");
    vp_offline_free(&ds);
    // recorded on other bars (another seed of the market)
    static const char* const OTHER[] = {"train.algo=iql", "iql.dataset=unused.safetensors", "iql.batch=16",
                                        "train.train_steps=2", "data.path=synth:trend:bars=1500,seed=4"};
    vp_config oc;
    vp_train_data od;
    if (vpt_record_data(&od, &oc, 5, OTHER)) {
        CHECK(record(&od, &oc, b, 0, &ds), "recording on other bars: %s", vp_last_error());
        const vp_status s = vp_iql_trainer_init(&t, b, &cfg, &d, &ds);
        CHECK(s != VP_OK && strstr(vp_last_error(), "iql.dataset"), "a dataset of other bars: status %d, '%s'", (int)s,
              vp_last_error());
        vp_offline_free(&ds);
        vp_train_data_free(&od);
    }
    // no dataset named; a DQN learner's switch on
    CHECK(record(&d, &cfg, b, 0, &ds), "recording: %s", vp_last_error());
    vp_config c2 = cfg;
    c2.iql.dataset[0] = '\0';
    CHECK_STATUS(vp_iql_trainer_init(&t, b, &c2, &d, &ds), VP_ERR_INVALID_ARG, "set iql.dataset");
    c2 = cfg;
    c2.learn.popart = true;
    CHECK_STATUS(vp_iql_trainer_init(&t, b, &c2, &d, &ds), VP_ERR_UNSUPPORTED, "learn.popart is a switch of the DQN");
    // the algorithm entry reads iql.dataset: a missing file is named with the key
    vp_algo a;
    memset(&a, 0, sizeof a);
    c2 = cfg;
    snprintf(c2.iql.dataset, sizeof c2.iql.dataset, "/nonexistent/iql_dataset.safetensors");
    const vp_status s = vp_algo_create(&a, &c2, b, &d, VP_ALGO_TRAIN);
    CHECK(s != VP_OK && strstr(vp_last_error(), "iql.dataset /nonexistent/iql_dataset.safetensors"),
          "a missing dataset: status %d, '%s'", (int)s, vp_last_error());
    vp_algo_free(&a);
    vp_offline_free(&ds);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* The training loop over a dataset on disk: repeated and resumed runs. */
static void test_runs_repeat_and_resume(void) {
    char d1[400], d2[400], d3[400], ds_path[480], ds_key[520];
    vpt_tmp_dir(d1, sizeof d1, "iqlrun1");
    vpt_tmp_dir(d2, sizeof d2, "iqlrun2");
    vpt_tmp_dir(d3, sizeof d3, "iqlrun3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    snprintf(ds_path, sizeof ds_path, "%s.dataset.safetensors", d1);
    snprintf(ds_key, sizeof ds_key, "iql.dataset=%s", ds_path);
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_record_data(&d, &cfg, 4, OVER)) return;
    CHECK(record(&d, &cfg, b, 0, &ds), "recording: %s", vp_last_error());
    CHECK_OK(vp_offline_save(&ds, ds_path));
    vp_offline_free(&ds);
    vp_train_data_free(&d);
    vp_backend_free(b);
    const char* const over[] = {"train.algo=iql", ds_key, "iql.batch=16", "train.train_steps=2"};
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, 4, over, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 0, NULL, 4, over, &r2));
    CHECK_OK(vpt_train_run(d3, VP_RUN_CREATE, 23, NULL, 4, over, &r3));
    CHECK_OK(vpt_train_run(d3, VP_RUN_RESUME, 0, NULL, 4, over, &r3));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* bb = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && bb && strcmp(a, bb) == 0, "two IQL runs of one config differ");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed IQL run differs:\n%s\nvs\n%s",
          c ? c : "", e ? e : "");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    CHECK(c && strstr(c, "\"value_loss\":") && strstr(c, "\"q_loss\":") && strstr(c, "\"policy_loss\":"),
          "the train events lack IQL's losses");
    CHECK(r1.best_iteration > 0 && r1.test.windows > 0, "run: best iteration %lld, test windows %lld",
          (long long)r1.best_iteration, (long long)r1.test.windows);
    free(a), free(bb), free(c), free(e);
    remove(ds_path);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    RUN_TEST(test_resume_and_tampered);
    RUN_TEST(test_runs_repeat_and_resume);
    RUN_TEST(test_refused_datasets);
    return vpt_finish();
}
