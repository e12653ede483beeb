/* A PPO resume from a tampered checkpoint (CPU) is refused before anything uses it: each case
 * edits one word of a trainer's state (an env field, a device counter, the AdamW step), saves
 * it and loads it into a second trainer, which refuses with a message naming the tensor; a
 * checkpoint of another config, a best checkpoint and a DQN checkpoint are refused too; the
 * untouched checkpoint loads. */
#include "test_train_util.h"

#include <math.h>
#include <stdint.h>

#include "learn/ppo_impl.h"
#include "vp_test.h"

static const char* const OVER[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=2"};

/* A PPO trainer with its data on its own backend. */
typedef struct rig {
    vp_backend* b;
    vp_train_data d;
    vp_ppo_trainer t;
    int ok;
} rig;

static int rig_init(rig* r, int n, const char* const* over) {
    memset(r, 0, sizeof *r);
    vp_config cfg;
    r->ok = vp_backend_cpu_init(&r->b) == VP_OK && vpt_train_cfg(&cfg, n, over) &&
            vp_train_data_load(&r->d, &cfg) == VP_OK && vp_ppo_trainer_init(&r->t, r->b, &cfg, &r->d) == VP_OK;
    CHECK(r->ok, "rig: %s", vp_last_error());
    return r->ok;
}

static void rig_free(rig* r) {
    vp_ppo_trainer_free(&r->t);
    vp_train_data_free(&r->d);
    vp_backend_free(r->b);
}

static void env_t_huge(vp_ppo_trainer* t) { t->env.state.t[1] = INT32_MAX; }
static void env_cash_nan(vp_ppo_trainer* t) { t->env.state.cash[0] = NAN; }
static void env_window_early(vp_ppo_trainer* t) { t->env.state.window_end[2] = (int32_t)t->market.begin; }
static void ctr_step(vp_ppo_trainer* t) { ((int64_t*)t->ctr.data)[VP_PPO_CTR_STEP] += 1; }
static void ctr_epoch(vp_ppo_trainer* t) { ((int64_t*)t->ctr.data)[VP_PPO_CTR_EPOCH] = -1; }
static void adam_step(vp_ppo_trainer* t) { ((int32_t*)t->adam_step.data)[0] = 3; }

static void test_tampered(void) {
    static const struct {
        const char* name;
        void (*edit)(vp_ppo_trainer*);
        const char* needle;
    } cases[] = {{"env t", env_t_huge, "env.state"},         {"env cash", env_cash_nan, "env.state"},
                 {"env window", env_window_early, "env.state"}, {"sampling counter", ctr_step, "ppo.counters"},
                 {"epoch counter", ctr_epoch, "ppo.counters"},  {"adam step", adam_step, "adam.step"}};
    char dir[512], path[600], good[600];
    vpt_tmp_dir(dir, sizeof dir, "ppockpt");
    vpt_rm_run(dir);
    mkdir(dir, 0755);
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    rig a, b;
    if (!rig_init(&a, 4, OVER) || !rig_init(&b, 4, OVER)) return;
    CHECK_OK(vp_ppo_trainer_iterate(&a.t, 2));
    CHECK_OK(vp_ppo_trainer_save(&a.t, good, VP_CKPT_RESUME, 1.5, 2));
    double sh = 0.0;
    int64_t it = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        rig c;
        if (!rig_init(&c, 4, OVER)) break;
        CHECK_OK(vp_ppo_trainer_iterate(&c.t, 2));
        cases[k].edit(&c.t);
        snprintf(path, sizeof path, "%s/bad%zu.safetensors", dir, k);
        CHECK_OK(vp_ppo_trainer_save(&c.t, path, VP_CKPT_RESUME, NAN, -1));
        const vp_status s = vp_ppo_trainer_load(&b.t, path, &sh, &it);
        CHECK(s == VP_ERR_PARSE && strstr(vp_last_error(), cases[k].needle), "%s: status %d, message '%s'",
              cases[k].name, (int)s, vp_last_error());
        rig_free(&c);
    }
    // the untouched checkpoint loads, with its counters and best score
    CHECK_OK(vp_ppo_trainer_load(&b.t, good, &sh, &it));
    CHECK(b.t.count.iteration == 2 && sh == 1.5 && it == 2, "loaded: iteration %lld, best %g at %lld",
          (long long)b.t.count.iteration, sh, (long long)it);
    // a best checkpoint, and one of another PPO config, are not this run's resume
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    CHECK_OK(vp_ppo_trainer_save(&a.t, path, VP_CKPT_BEST, 1.5, 2));
    CHECK_STATUS(vp_ppo_trainer_save(&a.t, path, VP_CKPT_KIND_COUNT, 1.5, 2), VP_ERR_INVALID_ARG,
                 "vp_ppo_trainer_save: bad kind 2");
    CHECK_STATUS(vp_ppo_trainer_load(&b.t, path, &sh, &it), VP_ERR_PARSE, "not a resume checkpoint");
    static const char* const OTHER[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=2",
                                        "ppo.clip=0.3"};
    rig o;
    if (rig_init(&o, 5, OTHER)) {
        CHECK_STATUS(vp_ppo_trainer_load(&o.t, good, &sh, &it), VP_ERR_INVALID_ARG, "ppo.clip was 0.2");
        rig_free(&o);
    }
    // a DQN network's parameters are no PPO network's
    vp_config dc;
    vp_train_data dd;
    vp_trainer dq;
    if (vpt_train_cfg(&dc, 0, NULL) && vp_train_data_load(&dd, &dc) == VP_OK) {
        if (vp_trainer_init(&dq, a.b, &dc, &dd) == VP_OK) {
            snprintf(path, sizeof path, "%s/dqn.safetensors", dir);
            CHECK_OK(vp_trainer_save(&dq, path, VP_CKPT_BEST));
            CHECK_STATUS(vp_ppo_read_params(a.b, &a.t.net, path, &a.t.best_params), VP_ERR_PARSE,
                         "holds no PPO network");
            vp_trainer_free(&dq);
        }
        vp_train_data_free(&dd);
    }
    rig_free(&a), rig_free(&b);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_tampered);
    return vpt_finish();
}
