/* The flat C API (vulpes/api.h) from C, as a foreign caller sees it: errors as status codes with
 * the library's message and no source location; envs on a synthetic market with their settings,
 * buffers and first observation; the window buffer holding the feature rows t-K+1..t; flat
 * actions earning exactly 0 until the episode window's end; the C forward of a checkpoint's
 * network equal to vp_model_forward on the same rows. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "test_train_util.h"
#include "vp_test.h"

#define SYNTH "data.path=synth:gbm:bars=3000,seed=5"

static const char* const OVER[] = {SYNTH, "env.episode_bars=16"};

static void test_errors_and_messages(void) {
    CHECK(vp_api_version() == VP_API_VERSION, "version %d", vp_api_version());
    vp_api_model* m = (vp_api_model*)1;
    const int s = vp_api_model_open("/nonexistent/ck.safetensors", &m);
    CHECK(s == VP_ERR_IO && m == NULL, "status %d", s);
    const char* msg = vp_api_last_error();
    const char* head = "opening checkpoint /nonexistent/ck.safetensors: ";
    CHECK(strncmp(msg, head, strlen(head)) == 0, "'%s'", msg);
    CHECK(strstr(msg, "cannot open") != NULL && strstr(msg, " (VP_ERR_") == NULL && strstr(msg, ".c:") == NULL,
          "'%s'", msg);
    CHECK(strcmp(vp_api_status_name(s), "VP_ERR_IO") == 0, "%s", vp_api_status_name(s));
    vp_api_env* e = NULL;
    const char* bad[] = {SYNTH, "env.n_envz=3"};
    CHECK(vp_api_env_open(NULL, bad, 2, "train", "cpu", 2, &e) == VP_ERR_INVALID_ARG && e == NULL, "bad key");
    CHECK(strcmp(vp_api_last_error(), "command line: unknown key 'env.n_envz' (did you mean 'env.n_envs'?)") == 0,
          "'%s'", vp_api_last_error());
    CHECK(vp_api_env_open(NULL, OVER, 2, "future", "cpu", 2, &e) == VP_ERR_INVALID_ARG, "bad span");
    CHECK(strcmp(vp_api_last_error(), "span 'future': choose train, val, test or all") == 0, "'%s'",
          vp_api_last_error());
    CHECK(vp_api_env_open(NULL, OVER, 2, "train", "tpu", 2, &e) == VP_ERR_INVALID_ARG, "bad backend");
    CHECK(strcmp(vp_api_last_error(), "unknown backend 'tpu' (choose cpu, cuda or auto)") == 0, "'%s'",
          vp_api_last_error());
}

static void test_envs(void) {
    vp_api_env* e = NULL;
    CHECK_OK((vp_status)vp_api_env_open(NULL, OVER, 2, "train", "cpu", 3, &e));
    if (!e) return;
    int64_t v = 0;
    const char* names[] = {"n_envs", "window", "n_features", "n_portfolio", "n_branches", "branch_size0",
                           "branch_size1", "branch_size2", "branch_size3", "episode_bars", "device"};
    const int64_t want[] = {3, 8, 32, 8, 4, 3, 4, 3, 3, 16, 0};
    for (int i = 0; i < 11; ++i) {
        CHECK_OK((vp_status)vp_api_env_info(e, names[i], &v));
        CHECK(v == want[i], "%s = %lld, expected %lld", names[i], (long long)v, (long long)want[i]);
    }
    CHECK(vp_api_env_info(e, "colour", &v) == VP_ERR_INVALID_ARG, "unknown info");
    int dt = -1, nd = -1;
    int64_t sh[3];
    float* win = (float*)vp_api_env_buffer(e, "window", &dt, &nd, sh);
    CHECK(win && dt == 0 && nd == 3 && sh[0] == 3 && sh[1] == 8 && sh[2] == 32, "window %d %d", dt, nd);
    int32_t* act = (int32_t*)vp_api_env_buffer(e, "actions", &dt, &nd, sh);
    CHECK(act && dt == 1 && nd == 2 && sh[0] == 3 && sh[1] == 4, "actions %d %d", dt, nd);
    float* port = (float*)vp_api_env_buffer(e, "portfolio", &dt, &nd, sh);
    float* rew = (float*)vp_api_env_buffer(e, "reward", &dt, &nd, sh);
    float* done = (float*)vp_api_env_buffer(e, "done", &dt, &nd, sh);
    int32_t* bar = (int32_t*)vp_api_env_buffer(e, "bar", &dt, &nd, sh);
    const float* feats = (const float*)vp_api_env_buffer(e, "features", &dt, &nd, sh);
    CHECK(feats && sh[0] == 3000 && sh[1] == 32, "features [%lld, %lld]", (long long)sh[0], (long long)sh[1]);
    CHECK(vp_api_env_buffer(e, "prices", &dt, &nd, sh) == NULL && strstr(vp_api_last_error(), "'prices'"), "name");
    if (!win || !act || !port || !rew || !done || !bar || !feats) {
        vp_api_env_close(e);
        return;
    }
    CHECK_OK((vp_status)vp_api_env_reset(e, 9));
    const float first[8] = {0, 0, 0, 0, 0, 0, 1, 0};  // flat, full time left
    for (int i = 0; i < 3; ++i) CHECK(memcmp(port + 8 * i, first, sizeof first) == 0, "env %d portfolio", i);
    for (int i = 0; i < 3; ++i) act[4 * i] = 1;  // flat, size 0.25, no levels
    int bad_rows = 0;
    for (int step = 1; step <= 32; ++step) {
        CHECK_OK((vp_status)vp_api_env_step(e));
        for (int i = 0; i < 3; ++i) {
            CHECK(rew[i] == 0.0f && done[i] == (step % 16 == 0 ? 1.0f : 0.0f), "step %d env %d: reward %g done %g",
                  step, i, rew[i], done[i]);
            for (int k = 0; k < 8; ++k) {
                const int r = bar[i] - 7 + k < 0 ? 0 : bar[i] - 7 + k;
                bad_rows += memcmp(win + (i * 8 + k) * 32, feats + (int64_t)r * 32, 32 * sizeof(float)) != 0;
            }
        }
    }
    CHECK(bad_rows == 0, "%d window rows differ from the features", bad_rows);
    act[0] = 3;  // direction out of range
    CHECK(vp_api_env_step(e) == VP_ERR_INVALID_ARG, "bad action");
    CHECK(strcmp(vp_api_last_error(), "vp_env_step: env 0 direction choice 3 is not in 0..2") == 0, "'%s'",
          vp_api_last_error());
    vp_api_env_close(e);
}

static void test_forward_of_a_checkpoint(void) {
    char dir[256], ck[300];
    snprintf(dir, sizeof dir, "%s/vp_test_api_%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    const char* over[] = {SYNTH, "train.iterations=1", "train.eval_every=1", "env.n_envs=4", "env.episode_bars=64",
                          "learn.batch=16", "replay.warmup=64", "replay.capacity=1024", "model.hidden=16",
                          "model.mamba_head_dim=8", "model.head_hidden=8", "model.n_atoms=11", "model.iqn_cos=4",
                          "model.window=4"};
    char run[1024] = "";
    CHECK_OK((vp_status)vp_api_train(NULL, over, 14, "cpu", dir, 1, 0, run, sizeof run));
    CHECK(strcmp(run, dir) == 0, "run folder '%s'", run);
    vp_api_model* m = NULL;
    CHECK_OK((vp_status)vp_api_model_open(vpt_path(ck, sizeof ck, dir, "best.safetensors"), &m));
    if (!m) return;
    double c = 0;
    CHECK_OK((vp_status)vp_api_model_cfg(m, "window", &c));
    CHECK(c == 4, "window %g", c);
    CHECK_OK((vp_status)vp_api_model_cfg(m, "n_heads", &c));
    CHECK(c == 13, "heads %g", c);
    CHECK(vp_api_model_cfg(m, "depth", &c) == VP_ERR_INVALID_ARG, "unknown cfg");
    CHECK(vp_api_model_n_params(m) > 0 && strcmp(vp_api_model_param_name(m, 0), "trunk.w1") == 0, "params");
    int64_t shape[2];
    int nd = 0;
    CHECK_OK((vp_status)vp_api_model_param_shape(m, "trunk.w1", shape, &nd));
    CHECK(nd == 2 && shape[0] == 16 && shape[1] == 32, "trunk.w1 [%lld, %lld]", (long long)shape[0],
          (long long)shape[1]);
    // two samples: the same window rows through vp_api_model_forward and through the network's own
    // forward on a feature matrix of those rows, the decision bars 3 and 7
    enum { B = 2, K = 4, F = 32, P = 8, N = 3, A = 13, Z = 11 };
    float win[B * K * F], port[B * P], taus[B * N], q[B * A], lp[B * A * Z], qu[B * N * A];
    for (int i = 0; i < B * K * F; ++i) win[i] = (float)((i * 37 % 101) - 50) / 25.0f;
    for (int i = 0; i < B * P; ++i) port[i] = (float)(i % 5) / 5.0f - 0.4f;
    for (int i = 0; i < B * N; ++i) taus[i] = 0.1f + 0.13f * (float)i;
    CHECK_OK((vp_status)vp_api_model_forward(m, win, port, taus, B, N, q, lp, qu));
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model net;
    vp_model_cfg mc = vp_model_cfg_default();
    mc.window = K, mc.hidden = 16, mc.mamba_head_dim = 8, mc.head_hidden = 8, mc.n_atoms = Z, mc.iqn_cos = 4;
    CHECK_OK(vp_model_init(&net, b, &mc, 0));
    net.precision = VP_PREC_FP32;
    CHECK_OK(vp_dqn_read_params(b, &net, ck, &net.params));
    vp_model_acts* acts = NULL;
    CHECK_OK(vp_model_acts_init(&acts, &net, B, N, 0));
    int32_t bars[B] = {K - 1, 2 * K - 1};
    vp_tensor tf = vp_tensor_2d(win, VP_F32, VP_MEM_HOST, B * K, F), tb = vp_tensor_1d(bars, VP_I32, VP_MEM_HOST, B);
    vp_tensor tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, B, P), tt = vp_tensor_2d(taus, VP_F32, VP_MEM_HOST, B, N);
    CHECK_OK(vp_model_forward(&net, &net.params, acts, &tf, &tb, &tp, &tt, B));
    vp_tensor rq = vp_model_q(acts), rl = vp_model_log_probs(acts), ri = vp_model_iqn(acts);
    CHECK(memcmp(rq.data, q, sizeof q) == 0, "q differs");
    CHECK(memcmp(rl.data, lp, sizeof lp) == 0, "log_probs differ");
    CHECK(memcmp(ri.data, qu, sizeof qu) == 0, "quantiles differ");
    CHECK(q[0] != q[A], "two samples, two Q rows");
    CHECK(vp_api_model_forward(m, win, port, NULL, B, N, q, NULL, NULL) == VP_ERR_INVALID_ARG, "taus NULL");
    vp_model_acts_free(acts);
    vp_model_free(&net);
    vp_backend_free(b);
    vp_api_model_close(m);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_errors_and_messages);
    RUN_TEST(test_envs);
    RUN_TEST(test_forward_of_a_checkpoint);
    return vpt_finish();
}
