/* Tests of the goal-conditioned DQN policy (CPU): the rows it scores are the env's portfolio
 * rows with its goal appended, exactly; its scores equal the network's heads on those rows
 * built by hand, bit for bit, and differ from a second goal's; an 8-wide policy has no goal
 * rows; a policy of a goal-conditioned network with a non-finite goal is refused. */
#include <math.h>

#include "test_model_util.h"
#include "vp_test.h"
#include "vulpes/env.h"
#include "vulpes/policy.h"

enum { N = 3, P = VP_ENV_PORTFOLIO, G = VP_ENV_PORTFOLIO + 1 };

static vp_backend* g_cpu;

/* A small network of F 4, K 4, H 16 with portfolio width `width`, and its policy of goal g. */
static int small_model(vp_model* m, int width) {
    tmu_dims d = {.F = 4, .P = width, .K = 4, .H = 16, .head_dim = 8, .N = 4, .head_hidden = 16, .Z = 11};
    vp_model_cfg c = tmu_cfg(d);
    vp_status s = vp_model_init(m, g_cpu, &c, 5);
    CHECK(s == VP_OK, "model: %s", vp_last_error());
    return s == VP_OK;
}

static void test_goal_rows_and_scores(void) {
    vp_model m;
    if (!small_model(&m, G)) return;
    float enc[N * 16], port[N * P], rows_hand[N * G];
    for (int i = 0; i < N * 16; ++i) enc[i] = 0.01f * (float)((i * 7) % 23) - 0.1f;
    for (int i = 0; i < N * P; ++i) port[i] = 0.125f * (float)(i % 9) - 0.5f;
    for (int e = 0; e < N; ++e) {
        for (int k = 0; k < P; ++k) rows_hand[e * G + k] = port[e * P + k];
        rows_hand[e * G + P] = 0.75f;
    }
    vp_tensor te = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, N, 16), tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, N, P);
    vp_policy pol = vp_model_policy(&m, &m.params);
    pol.goal = 0.75f;
    vp_policy_work* w = NULL;
    CHECK_OK(vp_policy_work_init(&pol, N, &w));
    vp_tensor rows;
    CHECK_OK(vp_policy_goal_rows(&pol, w, &tp, N, &rows));
    CHECK(rows.shape[0] == N && rows.shape[1] == G && memcmp(rows.data, rows_hand, sizeof rows_hand) == 0,
          "goal rows differ from the env's rows with 0.75 appended");
    // the policy's scores against the heads on the hand-built rows
    vp_tensor q;
    CHECK_OK(vp_policy_score(&pol, w, &te, &tp, N, &q));
    const int64_t A = q.shape[1];
    float* qa = (float*)malloc(sizeof(float) * (size_t)(N * A));
    memcpy(qa, q.data, sizeof(float) * (size_t)(N * A));
    vp_model_acts* acts = NULL;
    CHECK_OK(vp_model_acts_init(&acts, &m, N, 0, 0));
    vp_tensor th = vp_tensor_2d(rows_hand, VP_F32, VP_MEM_HOST, N, G);
    CHECK_OK(vp_model_heads(&m, &m.params, acts, &te, &th, NULL, N));
    vp_tensor qh = vp_model_q(acts);
    CHECK(memcmp(qa, qh.data, sizeof(float) * (size_t)(N * A)) == 0, "scores differ from the heads on the goal rows");
    // another goal changes the scores
    vp_policy pol2 = pol;
    pol2.goal = -2.0f;
    vp_policy_work* w2 = NULL;
    CHECK_OK(vp_policy_work_init(&pol2, N, &w2));
    CHECK_OK(vp_policy_score(&pol2, w2, &te, &tp, N, &q));
    CHECK(memcmp(qa, q.data, sizeof(float) * (size_t)(N * A)) != 0, "the goal does not reach the scores");
    // a non-finite goal is refused
    vp_policy bad = pol;
    bad.goal = NAN;
    vp_policy_work* w3 = NULL;
    CHECK_STATUS(vp_policy_work_init(&bad, N, &w3), VP_ERR_INVALID_ARG, "goal-conditioned");
    free(qa);
    vp_model_acts_free(acts);
    vp_policy_work_free(&pol, w), vp_policy_work_free(&pol2, w2);
    vp_model_free(&m);
}

static void test_plain_policy_has_no_goal_rows(void) {
    vp_model m;
    if (!small_model(&m, P)) return;
    float port[N * P] = {0};
    vp_tensor tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, N, P), rows;
    vp_policy pol = vp_model_policy(&m, &m.params);
    vp_policy_work* w = NULL;
    CHECK_OK(vp_policy_work_init(&pol, N, &w));
    CHECK_STATUS(vp_policy_goal_rows(&pol, w, &tp, N, &rows), VP_ERR_INVALID_ARG, "not a goal-conditioned");
    vp_policy_work_free(&pol, w);
    vp_model_free(&m);
}

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_goal_rows_and_scores);
    RUN_TEST(test_plain_policy_has_no_goal_rows);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
