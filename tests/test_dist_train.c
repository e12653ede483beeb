/* The training loop with a communicator (vp_train_opts.comm) on the CPU: a one-rank
 * communicator attached to the DQN learner gives the same metrics.jsonl (timing lines aside)
 * and the same checkpoint bytes as no communicator; an algorithm without a data-parallel
 * learner is refused by name before the run folder is made. */
#include <sys/stat.h>

#include "test_train_util.h"
#include "vp_test.h"


static void test_one_rank_same_run(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    char d1[512], d2[512];
    vpt_tmp_dir(d1, sizeof d1, "dist_plain");
    vpt_tmp_dir(d2, sizeof d2, "dist_comm");
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_dist one = vp_dist_single();
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &one, b, NULL));
    const char* over[] = {"train.iterations=20"};
    vp_train_result r1, r2;
    CHECK_OK(vpt_train_comm(b, d1, NULL, 1, over, &r1));
    CHECK_OK(vpt_train_comm(b, d2, c, 1, over, &r2));
    char* a = vpt_metrics_lines(d1, "train|eval|checkpoint");
    char* e = vpt_metrics_lines(d2, "train|eval|checkpoint");
    CHECK(a && e && vpt_count_lines(a) >= 6 && strcmp(a, e) == 0,
          "metrics.jsonl with the one-rank communicator differs (%d and %d lines)", a ? vpt_count_lines(a) : -1,
          e ? vpt_count_lines(e) : -1);
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d2, "best.safetensors"),
          "checkpoints with the one-rank communicator differ");
    free(a), free(e);
    vp_comm_free(c);
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_backend_free(b);
}

static void test_other_algorithm_refused(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    char d[512];
    vpt_tmp_dir(d, sizeof d, "dist_ppo");
    vpt_rm_run(d);
    vp_dist one = vp_dist_single();
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &one, b, NULL));
    const char* over[] = {"train.algo=ppo", "ppo.rollout_steps=8", "ppo.minibatches=1", "env.n_envs=8"};
    vp_train_result r;
    CHECK_STATUS(vpt_train_comm(b, d, c, 4, over, &r), VP_ERR_UNSUPPORTED,
                 "train.algo ppo has no data-parallel learner");
    struct stat st;
    CHECK(stat(d, &st) != 0, "the refused run made %s", d);
    vp_comm_free(c);
    vpt_rm_run(d);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_one_rank_same_run);
    RUN_TEST(test_other_algorithm_refused);
    return vpt_finish();
}
