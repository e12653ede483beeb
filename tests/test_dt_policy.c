/* The Decision Transformer's policy with memory on the CPU: over 7 steps of 67 rows (a forward of
 * 64 sequences, then one of 3) with a context of 3, each step's scores equal, bit for bit, the forward of the sequence built here by hand from
 * the steps so far (the last min(k + 1, 3) states in order, their returns-to-go the target less
 * the rewards observed before each, the actions observed, timesteps from the first step kept, the
 * current action token empty), read at its last state token, with one row given no step at one
 * call (reward NaN: that call's state is not kept); and the policy refuses more rows than its
 * workspace. */
#include <stdio.h>

#include "test_dt_util.h"

enum { N = 67, K = 3, H = 6, P = 8, STEPS = 7 };

static void test_memory(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const vp_model_cfg mc = vpt_dt_model_cfg(H, P, 5);
    const vp_dt_dims dd = vpt_dt_dims(K, 8, 2, 2, 4);
    vp_dt_net n;
    CHECK_OK(vp_dt_net_init(&n, be, &mc, &dd, 31));
    const float target = 5.5f;
    const vp_policy pol = vp_dt_policy(&n, &n.params, target);
    vp_policy_work* w = NULL;
    CHECK_OK(vp_policy_work_init(&pol, N, &w));
    vp_dt_acts* a = NULL;
    CHECK_OK(vp_dt_acts_init(&a, &n, N, 0, 0, 1));
    if (!w || !a) return;
    const int A = n.dims.A;
    // every step's inputs, drawn up front
    float enc[STEPS][N][H], port[STEPS][N][P], rew[STEPS][N];
    int32_t act[STEPS][N][4];
    const vp_action_layout lay = vp_action_layout_env();
    for (int k = 0; k < STEPS; ++k)
        for (int i = 0; i < N; ++i) {
            for (int c = 0; c < H; ++c) enc[k][i][c] = vp_rng_normal(1, (uint64_t)(k * N + i), (uint64_t)c);
            for (int c = 0; c < P; ++c) port[k][i][c] = vp_rng_normal(2, (uint64_t)(k * N + i), (uint64_t)c);
            rew[k][i] = vp_rng_normal(3, (uint64_t)(k * N + i), 0);
            for (int br = 0; br < 4; ++br) act[k][i][br] = (k + i + br) % lay.size[br];
        }
    // row 1 takes no step at call 3 (reward NaN): its score there is overwritten by the next
    int taken[STEPS][N];
    for (int k = 0; k < STEPS; ++k)
        for (int i = 0; i < N; ++i) taken[k][i] = !(i == 1 && k == 3);
    int exact = 0;
    for (int k = 0; k < STEPS; ++k) {
        vp_tensor e = vp_tensor_2d(enc[k], VP_F32, VP_MEM_HOST, N, H), pf = vp_tensor_2d(port[k], VP_F32, VP_MEM_HOST, N, P);
        vp_tensor sc;
        CHECK_OK(vp_policy_score(&pol, w, &e, &pf, N, &sc));
        float got[N * 32];
        memcpy(got, sc.data, sizeof(float) * (size_t)(N * A));
        // the sequences by hand: each row's steps taken before this call, then this call's
        vp_dt_batch x = vpt_dt_batch(N, K, P);
        vp_tensor es = vp_tensor_2d(calloc((size_t)(N * K * H), 4), VP_F32, VP_MEM_HOST, N * K, H);
        int lens[N];
        for (int i = 0; i < N; ++i) {
            int idx[STEPS], cnt = 0;
            float rtg[STEPS], g = target;
            for (int q = 0; q < k; ++q)
                if (taken[q][i]) {
                    rtg[cnt] = g;
                    g -= rew[q][i];
                    idx[cnt++] = q;
                }
            rtg[cnt] = g;
            idx[cnt++] = k;
            const int len = cnt < K ? cnt : K, first = cnt - len;
            lens[i] = len;
            for (int j = 0; j < len; ++j) {
                const int q = idx[first + j], o = i * K + j;
                memcpy((float*)es.data + o * H, enc[q][i], sizeof(float) * H);
                memcpy((float*)x.port.data + o * P, port[q][i], sizeof(float) * P);
                if (first + j < cnt - 1) memcpy((int32_t*)x.act.data + o * 4, act[q][i], sizeof(int32_t) * 4);
                ((float*)x.rtg.data)[o] = rtg[first + j];
                ((int32_t*)x.ts.data)[o] = first + j;
                ((float*)x.valid.data)[o] = 1.0f;
            }
        }
        CHECK_OK(vp_dt_forward(&n, &n.params, a, &es, &x, N));
        const float* lg = (const float*)vp_dt_logits(a).data;
        for (int i = 0; i < N; ++i) {
            const float* want = lg + ((int64_t)i * 3 * K + 3 * (lens[i] - 1) + 1) * A;
            const int same = memcmp(got + i * A, want, sizeof(float) * (size_t)A) == 0;
            CHECK(same, "step %d row %d: the policy's scores differ from the hand-built sequence's", k, i);
            exact += same;
        }
        free(es.data);
        vpt_dt_batch_free(&x);
        // the environment's step (NaN where the row took none)
        float rw[N];
        for (int i = 0; i < N; ++i) rw[i] = taken[k][i] ? rew[k][i] : NAN;
        vp_tensor at = vp_tensor_2d(act[k], VP_I32, VP_MEM_HOST, N, 4), rt = vp_tensor_1d(rw, VP_F32, VP_MEM_HOST, N);
        CHECK_OK(vp_policy_observe(&pol, w, &at, &rt, N));
    }
    fprintf(stderr, "  %d of %d scored rows equal to the hand-built sequences bit for bit\n", exact, STEPS * N);
    // more rows than the workspace holds
    static float big[(N + 1) * P];
    vp_tensor e3 = vp_tensor_2d(big, VP_F32, VP_MEM_HOST, N + 1, H), p3 = vp_tensor_2d(big, VP_F32, VP_MEM_HOST, N + 1, P), sc;
    CHECK_STATUS(vp_policy_score(&pol, w, &e3, &p3, N + 1, &sc), VP_ERR_INVALID_ARG, "68 rows for a workspace of 67");
    vp_dt_acts_free(a);
    vp_policy_work_free(&pol, w);
    vp_dt_net_free(&n);
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_memory);
    return vpt_finish();
}
