/* Tests of curiosity's forward model on the CPU: the input x and the forward by hand (one
 * encoding column, one portfolio column, one branch of two choices, two hidden units), the
 * intrinsic reward and its done mask, the iteration mean, the loss and every gradient by hand,
 * the first AdamW step, finite differences of the gradient on a random model of two branches,
 * the loss falling on a learnable relation, and argument refusals. */
#include "vp_test.h"
#include "vulpes/curiosity.h"

static vp_backend* g_b;

/* E = B = 2, H = 1, P = 1, one branch of 2 choices, Hd = 2: D = 4, W = 13. */
static vp_curiosity_cfg tiny_cfg(void) {
    vp_curiosity_cfg c;
    memset(&c, 0, sizeof c);
    c.n_envs = 2;
    c.batch = 2;
    c.steps_per_iter = 1;
    c.enc_dim = 1;
    c.n_portfolio = 1;
    c.layout.n_branches = 1;
    c.layout.n_heads = 2;
    c.layout.size[0] = 2;
    c.layout.offset[0] = 0;
    c.hidden = 2;
    c.eta = 0.5f;
    c.adamw.lr = 1e-3f;
    c.adamw.beta1 = 0.9f;
    c.adamw.beta2 = 0.999f;
    c.adamw.eps = 1e-8f;
    c.precision = VP_PREC_FP32;
    c.seed = 7;
    return c;
}

/* W1 = [[1, 2, 0.5, -1], [-1, 1, 0, 2]], b1 = [0.5, -0.5], W2 = [[2, -1]], b2 = [0.25]. */
static const float TINY_W[13] = {1, 2, 0.5f, -1, -1, 1, 0, 2, 0.5f, -0.5f, 2, -1, 0.25f};
/* Rows: enc 1, port 0.5, choice 1 -> x [1, 0.5, 0, 1], h [1.5, 1], f 2.25;
 *       enc -2, port 1, choice 0 -> x [-2, 1, 1, 0], h [1, 2.5], f -0.25. */
static float g_enc[2] = {1, -2}, g_port[2] = {0.5f, 1}, g_next[2] = {1.25f, 1.75f}, g_done[2] = {0, 1};
static int32_t g_act[2] = {1, 0};

static vp_tensor host1(float* p, int64_t n) { return vp_tensor_1d(p, VP_F32, VP_MEM_HOST, n); }

/* A tiny model with the hand-chosen parameters. */
static int tiny(vp_curiosity* c) {
    vp_curiosity_cfg cfg = tiny_cfg();
    vp_status s = vp_curiosity_init(c, g_b, &cfg, NULL);
    CHECK(s == VP_OK, "init: %s", vp_last_error());
    if (s != VP_OK) return 0;
    CHECK(c->in_dim == 4 && c->n_weights == 13, "D %lld, W %lld", (long long)c->in_dim, (long long)c->n_weights);
    CHECK_OK(vp_upload(g_b, &c->params, TINY_W, sizeof TINY_W));
    return 1;
}

static void test_forward_by_hand(void) {
    vp_curiosity c;
    if (!tiny(&c)) return;
    vp_tensor enc = vp_tensor_2d(g_enc, VP_F32, VP_MEM_HOST, 2, 1), port = vp_tensor_2d(g_port, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor act = vp_tensor_2d(g_act, VP_I32, VP_MEM_HOST, 2, 1), f;
    CHECK_OK(vp_curiosity_forward(&c, &enc, &port, &act, 2, &f));
    const float x_want[8] = {1, 0.5f, 0, 1, -2, 1, 1, 0}, h_want[4] = {1.5f, 1, 1, 2.5f};
    const float* x = (const float*)c.x.data;
    const float* h = (const float*)c.h.data;
    for (int k = 0; k < 8; ++k) CHECK(x[k] == x_want[k], "x[%d] = %g, want %g", k, (double)x[k], (double)x_want[k]);
    for (int k = 0; k < 4; ++k) CHECK(h[k] == h_want[k], "h[%d] = %g, want %g", k, (double)h[k], (double)h_want[k]);
    const float* fv = (const float*)f.data;
    CHECK(vp_tensor_rows(&f) == 2 && fv[0] == 2.25f && fv[1] == -0.25f, "f = %g, %g (want 2.25, -0.25)", (double)fv[0],
          (double)fv[1]);
    vp_curiosity_free(&c);
}

static void test_reward_by_hand(void) {
    vp_curiosity c;
    if (!tiny(&c)) return;
    vp_tensor enc = vp_tensor_2d(g_enc, VP_F32, VP_MEM_HOST, 2, 1), port = vp_tensor_2d(g_port, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor act = vp_tensor_2d(g_act, VP_I32, VP_MEM_HOST, 2, 1), next = vp_tensor_2d(g_next, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor done = host1(g_done, 2), r;
    // errors 1 and -2: r_int = 0.5 x 0.5 x [1, 4]
    CHECK_OK(vp_curiosity_reward(&c, &enc, &port, &act, &next, NULL, &r));
    const float* rv = (const float*)r.data;
    CHECK(rv[0] == 0.25f && rv[1] == 1.0f, "r_int = %g, %g (want 0.25, 1)", (double)rv[0], (double)rv[1]);
    // env 1 ended its episode: its next portfolio is a restart, no reward
    CHECK_OK(vp_curiosity_reward(&c, &enc, &port, &act, &next, &done, &r));
    CHECK(rv[0] == 0.25f && rv[1] == 0.0f, "masked r_int = %g, %g (want 0.25, 0)", (double)rv[0], (double)rv[1]);
    // the iteration's mean: (1.25 + 0.25) / (E 2 x S 1), then the sum restarts
    float st[VP_CUR_STAT_COUNT];
    CHECK_OK(vp_curiosity_close_iteration(&c));
    CHECK_OK(vp_curiosity_stats_read(&c, st));
    CHECK(st[VP_CUR_STAT_REWARD] == 0.75f, "mean r_int %g (want 0.75)", (double)st[VP_CUR_STAT_REWARD]);
    CHECK_OK(vp_curiosity_close_iteration(&c));
    CHECK_OK(vp_curiosity_stats_read(&c, st));
    CHECK(st[VP_CUR_STAT_REWARD] == 0.0f, "mean r_int of an empty iteration %g", (double)st[VP_CUR_STAT_REWARD]);
    vp_curiosity_free(&c);
}

/* One training step of the tiny model (done NULL or g_done), then loss and gradients checked
 * against `g_want` [13] and `loss_want`. */
static void train_case(int masked, const float* g_want, float loss_want) {
    vp_curiosity c;
    if (!tiny(&c)) return;
    vp_tensor enc = vp_tensor_2d(g_enc, VP_F32, VP_MEM_HOST, 2, 1), port = vp_tensor_2d(g_port, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor act = vp_tensor_2d(g_act, VP_I32, VP_MEM_HOST, 2, 1), next = vp_tensor_2d(g_next, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor done = host1(g_done, 2);
    CHECK_OK(vp_curiosity_train(&c, &enc, &port, &act, &next, masked ? &done : NULL));
    float st[VP_CUR_STAT_COUNT];
    CHECK_OK(vp_curiosity_stats_read(&c, st));
    CHECK(st[VP_CUR_STAT_LOSS] == loss_want, "loss %g (want %g)", (double)st[VP_CUR_STAT_LOSS], (double)loss_want);
    const float* g = (const float*)c.grads.data;
    for (int k = 0; k < 13; ++k)
        CHECK(g[k] == g_want[k], "masked %d: grad[%d] = %g, want %g", masked, k, (double)g[k], (double)g_want[k]);
    // AdamW's first step moves each weight by lr g / (|g| + eps): about lr against the gradient's sign
    const float* p = (const float*)c.params.data;
    int32_t step = -1;
    CHECK_OK(vp_download(g_b, &step, &c.step, sizeof step));
    CHECK(step == 1, "AdamW step %d", (int)step);
    for (int k = 0; k < 13; ++k) {
        const float want = g_want[k] == 0.0f ? TINY_W[k] : TINY_W[k] - (g_want[k] > 0 ? 1e-3f : -1e-3f);
        CHECK_NEAR(p[k], want, 1e-6, 0);
    }
    vp_curiosity_free(&c);
}

static void test_train_by_hand(void) {
    // df = (f - p') / 2 = [0.5, -1]; dW2 = sum df h; dh = df W2 (both h > 0); dW1 = sum dh^T x
    const float all[13] = {5, -1.5f, -2, 1, -2.5f, 0.75f, 1, -0.5f, -1, 0.5f, -0.25f, -2, -0.5f};
    train_case(0, all, 1.25f);
    // row 1 masked: df = [0.5, 0], loss (1 / 4) x 1
    const float first[13] = {1, 0.5f, 0, 1, -0.5f, -0.25f, 0, -0.5f, 1, -0.5f, 0.75f, 0.5f, 0.5f};
    train_case(1, first, 0.25f);
}

/* Loss (1 / 2B) sum ||f - y||^2 in double from a forward at the model's current parameters. */
static double loss_at(vp_curiosity* c, vp_tensor* enc, vp_tensor* port, vp_tensor* act, const float* y, int B, int P) {
    vp_tensor f;
    if (vp_curiosity_forward(c, enc, port, act, B, &f) != VP_OK) return NAN;
    const float* fv = (const float*)f.data;
    double s = 0.0;
    for (int i = 0; i < B * P; ++i) s += ((double)fv[i] - y[i]) * ((double)fv[i] - y[i]);
    return s / (2.0 * B);
}

static void test_gradient_fd(void) {
    // H 3, P 2, branches of 2 and 3 choices, Hd 4, B 3: D 10, W 54, parameters from the seed
    vp_curiosity_cfg cfg = tiny_cfg();
    cfg.n_envs = 3, cfg.batch = 3, cfg.enc_dim = 3, cfg.n_portfolio = 2, cfg.hidden = 4;
    cfg.layout.n_branches = 2, cfg.layout.n_heads = 5, cfg.layout.size[1] = 3, cfg.layout.offset[1] = 2;
    vp_curiosity c;
    CHECK_OK(vp_curiosity_init(&c, g_b, &cfg, NULL));
    if (c.params.data == NULL) return;
    CHECK(c.in_dim == 10 && c.n_weights == 54, "D %lld, W %lld", (long long)c.in_dim, (long long)c.n_weights);
    float enc[9] = {0.3f, -1.2f, 0.8f, 1.1f, 0.4f, -0.6f, -0.9f, 0.2f, 1.5f};
    float port[6] = {0.5f, -0.25f, 0.0f, 0.75f, -1.0f, 0.1f}, y[6] = {0.9f, -0.4f, 0.3f, 1.2f, -0.7f, 0.6f};
    int32_t act[6] = {1, 2, 0, 0, 1, 1};
    vp_tensor te = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, 3, 3), tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, 3, 2);
    vp_tensor ta = vp_tensor_2d(act, VP_I32, VP_MEM_HOST, 3, 2), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, 3, 2);
    // the one-hot part of row 0: choice 1 of branch 0 (column 6), choice 2 of branch 1 (column 9)
    vp_tensor f;
    CHECK_OK(vp_curiosity_forward(&c, &te, &tp, &ta, 3, &f));
    const float* x = (const float*)c.x.data;
    CHECK(x[0] == 0.3f && x[3] == 0.5f && x[4] == -0.25f && x[5] == 0 && x[6] == 1 && x[7] == 0 && x[8] == 0 &&
              x[9] == 1 && x[10 + 5] == 1 && x[10 + 7] == 1,
          "input rows");
    float p0[54], g[54];
    memcpy(p0, c.params.data, sizeof p0);
    CHECK_OK(vp_curiosity_train(&c, &te, &tp, &ta, &ty, NULL));
    memcpy(g, c.grads.data, sizeof g);
    float* p = (float*)c.params.data;
    const float h = 1e-3f;
    double worst = 0.0;
    for (int k = 0; k < 54; ++k) {
        memcpy(p, p0, sizeof p0);
        p[k] = p0[k] + h;
        const double lp = loss_at(&c, &te, &tp, &ta, y, 3, 2);
        p[k] = p0[k] - h;
        const double lm = loss_at(&c, &te, &tp, &ta, y, 3, 2);
        const double fd = (lp - lm) / (2.0 * h);
        CHECK_NEAR(g[k], fd, 5e-4, 1e-2);
        if (fabs(g[k] - fd) > worst) worst = fabs(g[k] - fd);
    }
    CHECK(worst < 5e-4, "largest |analytic - FD| %g", worst);
    vp_curiosity_free(&c);
}

/* A fixed batch whose next portfolio is a function of the inputs (p'_k = 0.5 p_k + 0.25 enc_k
 * + 0.5 x the first branch's choice): 300 steps at lr 0.01 bring the loss to a small fraction. */
static void test_learns(void) {
    enum { B = 64, HH = 3, PP = 2 };
    vp_curiosity_cfg cfg = tiny_cfg();
    cfg.n_envs = B, cfg.batch = B, cfg.enc_dim = HH, cfg.n_portfolio = PP, cfg.hidden = 16;
    cfg.layout.n_branches = 2, cfg.layout.n_heads = 5, cfg.layout.size[1] = 3, cfg.layout.offset[1] = 2;
    cfg.adamw.lr = 1e-2f;
    vp_curiosity c;
    CHECK_OK(vp_curiosity_init(&c, g_b, &cfg, NULL));
    if (c.params.data == NULL) return;
    float enc[B * HH], port[B * PP], y[B * PP];
    int32_t act[B * 2];
    for (int i = 0; i < B; ++i) {
        for (int k = 0; k < HH; ++k) enc[i * HH + k] = 2.0f * vp_rng_uniform(5, 1, (uint64_t)(i * HH + k)) - 1.0f;
        act[2 * i] = (int32_t)(vp_rng_draw(5, 2, (uint64_t)i).v[0] % 2u);
        act[2 * i + 1] = (int32_t)(vp_rng_draw(5, 3, (uint64_t)i).v[0] % 3u);
        for (int k = 0; k < PP; ++k) {
            port[i * PP + k] = 2.0f * vp_rng_uniform(5, 4, (uint64_t)(i * PP + k)) - 1.0f;
            y[i * PP + k] = 0.5f * port[i * PP + k] + 0.25f * enc[i * HH + k] + 0.5f * (float)act[2 * i];
        }
    }
    vp_tensor te = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, B, HH), tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, B, PP);
    vp_tensor ta = vp_tensor_2d(act, VP_I32, VP_MEM_HOST, B, 2), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, B, PP);
    float st[VP_CUR_STAT_COUNT], first = 0.0f;
    for (int k = 0; k < 300; ++k) {
        CHECK_OK(vp_curiosity_train(&c, &te, &tp, &ta, &ty, NULL));
        if (k == 0) {
            CHECK_OK(vp_curiosity_stats_read(&c, st));
            first = st[VP_CUR_STAT_LOSS];
        }
    }
    CHECK_OK(vp_curiosity_stats_read(&c, st));
    printf("  forward-model loss %.4f -> %.4f over 300 steps\n", (double)first, (double)st[VP_CUR_STAT_LOSS]);
    CHECK(first > 0.05f && st[VP_CUR_STAT_LOSS] < 0.02f * first, "loss %g -> %g", (double)first,
          (double)st[VP_CUR_STAT_LOSS]);
    vp_curiosity_free(&c);
}

static void test_refusals(void) {
    vp_curiosity_cfg cfg = tiny_cfg();
    vp_curiosity c;
    cfg.hidden = 0;
    CHECK_STATUS(vp_curiosity_init(&c, g_b, &cfg, NULL), VP_ERR_INVALID_ARG, "curiosity.hidden");
    cfg = tiny_cfg();
    cfg.eta = -1.0f;
    CHECK_STATUS(vp_curiosity_init(&c, g_b, &cfg, NULL), VP_ERR_INVALID_ARG, "curiosity.eta");
    cfg = tiny_cfg();
    cfg.precision = VP_PREC_BF16;
    CHECK_STATUS(vp_curiosity_init(&c, g_b, &cfg, NULL), VP_ERR_INVALID_ARG, "FP32 or TF32");
    if (!tiny(&c)) return;
    vp_tensor enc = vp_tensor_2d(g_enc, VP_F32, VP_MEM_HOST, 2, 1), port = vp_tensor_2d(g_port, VP_F32, VP_MEM_HOST, 2, 1);
    vp_tensor act = vp_tensor_2d(g_act, VP_I32, VP_MEM_HOST, 2, 1), f;
    CHECK_STATUS(vp_curiosity_forward(&c, &enc, &port, &act, 3, &f), VP_ERR_SHAPE, "3 rows");
    vp_tensor wrong = vp_tensor_2d(g_port, VP_F32, VP_MEM_HOST, 2, 1);
    CHECK_STATUS(vp_curiosity_forward(&c, &enc, &port, &wrong, 2, &f), VP_ERR_INVALID_ARG, "act");
    // the learner hook needs a policy to encode the batch with
    vp_batch batch;
    memset(&batch, 0, sizeof batch);
    CHECK_STATUS(vp_curiosity_learn(&c, &batch, 1), VP_ERR_INVALID_ARG, "no policy");
    vp_curiosity_free(&c);
}

int main(void) {
    if (vp_backend_cpu_init(&g_b) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_forward_by_hand);
    RUN_TEST(test_reward_by_hand);
    RUN_TEST(test_train_by_hand);
    RUN_TEST(test_gradient_fd);
    RUN_TEST(test_learns);
    RUN_TEST(test_refusals);
    vp_backend_free(g_b);
    return vpt_finish();
}
