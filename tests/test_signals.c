/* The training-signal bus on the CPU: the learning-rate schedules at hand-computed points;
 * AdamW and the clip with their scalars in memory equal the plain ops bit for bit; the bus
 * kernel on a hand-made batch of 2 samples, 3 heads (branches of 2 and 1) and 2 atoms gives
 * the hand-computed signals, EMAs, trends and, at the rule interval, the four rules'
 * controls; the epsilon factor and the Kelly cap act as documented. */
#include <math.h>

#include "learn/collect_math.h"
#include "learn/signal_math.h"
#include "vp_test.h"
#include "env/env_rules.h"
#include "vulpes/collect.h"

static vp_backend* g_b;

/* The schedules at points whose values are exact in float. */
static void test_schedules(void) {
    vp_signals_cfg c = vp_signals_cfg_default();
    c.total_steps = 4;
    // constant: lr0 throughout
    CHECK(vp_signals_lr_at(&c, 0.5f, 0) == 0.5f && vp_signals_lr_at(&c, 0.5f, 99) == 0.5f, "constant schedule");
    // cosine over K = 4: k 0 -> 0.5, k 2 -> 0.5 * 0.5 (1 + cos(pi / 2)) = 0.25, k >= 4 -> 0
    c.lr_schedule = VP_LR_COSINE;
    CHECK(vp_signals_lr_at(&c, 0.5f, 0) == 0.5f, "cosine k 0: %.9g", (double)vp_signals_lr_at(&c, 0.5f, 0));
    CHECK(vp_signals_lr_at(&c, 0.5f, 2) == 0.25f, "cosine k 2: %.9g", (double)vp_signals_lr_at(&c, 0.5f, 2));
    CHECK(vp_signals_lr_at(&c, 0.5f, 4) == 0.0f && vp_signals_lr_at(&c, 0.5f, 9) == 0.0f, "cosine end");
    // k 1: 0.25 (1 + cos(pi / 4)) = 0.25 + 0.125 sqrt(2)
    CHECK_NEAR(vp_signals_lr_at(&c, 0.5f, 1), 0.25 + 0.125 * sqrt(2.0), 0.0, 1e-7);
    // warm-up cosine, W = 4 of K = 8: 0.125, 0.25, 0.375, 0.5, then the cosine over 4 steps
    c.lr_schedule = VP_LR_WARMUP_COSINE;
    c.warmup_steps = 4;
    c.total_steps = 8;
    const float want[9] = {0.125f, 0.25f, 0.375f, 0.5f, 0.5f, -1.0f, 0.25f, -1.0f, 0.0f};
    for (int k = 0; k < 9; ++k)
        if (want[k] >= 0.0f)
            CHECK(vp_signals_lr_at(&c, 0.5f, k) == want[k], "warm-up cosine k %d: %.9g, want %.9g", k,
                  (double)vp_signals_lr_at(&c, 0.5f, k), (double)want[k]);
    // the schedule on the backend writes the same float from the 1-based step counter
    int32_t step = 3;
    float lr = 0.0f;
    CHECK_OK(vp_sig_cpu.sched(g_b, (int)c.lr_schedule, 0.5f, 4, 8, &step, &lr));
    CHECK(lr == 0.375f, "sched kernel at step 3: %.9g", (double)lr);
}

/* AdamW with lr in memory and the clip with its threshold in memory: the plain ops' bits. */
static void test_ops_in_memory(void) {
    float p1[5] = {1, -2, 0.5f, 3, -0.25f}, p2[5], g[5] = {0.3f, -0.1f, 2, -4, 0.01f}, m1[5] = {0}, v1[5] = {0};
    float m2[5] = {0}, v2[5] = {0}, lr = 3e-3f, mx = 1.5f, n1 = 0, c1 = 0, n2 = 0, c2 = 0;
    memcpy(p2, p1, sizeof p1);
    int32_t step = 1;
    vp_tensor tp1 = vp_tensor_1d(p1, VP_F32, VP_MEM_HOST, 5), tp2 = vp_tensor_1d(p2, VP_F32, VP_MEM_HOST, 5);
    vp_tensor tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, 5), tm1 = vp_tensor_1d(m1, VP_F32, VP_MEM_HOST, 5);
    vp_tensor tv1 = vp_tensor_1d(v1, VP_F32, VP_MEM_HOST, 5), tm2 = vp_tensor_1d(m2, VP_F32, VP_MEM_HOST, 5);
    vp_tensor tv2 = vp_tensor_1d(v2, VP_F32, VP_MEM_HOST, 5), ts = vp_tensor_1d(&step, VP_I32, VP_MEM_HOST, 1);
    vp_tensor tlr = vp_tensor_1d(&lr, VP_F32, VP_MEM_HOST, 1), tmx = vp_tensor_1d(&mx, VP_F32, VP_MEM_HOST, 1);
    vp_tensor tn1 = vp_tensor_1d(&n1, VP_F32, VP_MEM_HOST, 1), tc1 = vp_tensor_1d(&c1, VP_F32, VP_MEM_HOST, 1);
    vp_tensor tn2 = vp_tensor_1d(&n2, VP_F32, VP_MEM_HOST, 1), tc2 = vp_tensor_1d(&c2, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_clip_coef(g_b, &tg, 1.5f, &tn1, &tc1));
    CHECK_OK(vp_clip_coef_at(g_b, &tg, &tmx, &tn2, &tc2));
    CHECK(n1 == n2 && c1 == c2 && c1 < 1.0f, "clip in memory: norm %.9g / %.9g, coef %.9g / %.9g", (double)n1,
          (double)n2, (double)c1, (double)c2);
    const vp_adamw_cfg cfg = {3e-3f, 0.9f, 0.999f, 1.5e-4f, 0.01f};
    vp_adamw_cfg other = cfg;
    other.lr = 7.0f; /* not read by vp_adamw_lr */
    for (int t = 0; t < 3; ++t, ++step) {
        CHECK_OK(vp_adamw(g_b, &cfg, &tp1, &tg, &tm1, &tv1, &ts, &tc1));
        CHECK_OK(vp_adamw_lr(g_b, &other, &tlr, &tp2, &tg, &tm2, &tv2, &ts, &tc2));
    }
    CHECK(memcmp(p1, p2, sizeof p1) == 0 && memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0,
          "AdamW with lr in memory differs from AdamW with lr in cfg");
    float two[2] = {0};
    vp_tensor t2 = vp_tensor_1d(two, VP_F32, VP_MEM_HOST, 2);
    CHECK_STATUS(vp_adamw_lr(g_b, &cfg, &t2, &tp2, &tg, &tm2, &tv2, &ts, NULL), VP_ERR_SHAPE, "vp_adamw_lr: lr");
    CHECK_STATUS(vp_clip_coef_at(g_b, &tg, &t2, &tn2, &tc2), VP_ERR_SHAPE, "vp_clip_coef_at: max_norm");
}

/* The hand-made step: B 2, heads (0, 1 | 2), atoms -1 and 1. */
typedef struct hand {
    vp_sig_params p;
    vp_sig_inputs in;
    float lp[12], dlp[12], q[6], qn[6], qt[6], reward[2], disc[2], stats[VP_STAT_COUNT];
    int32_t act[4], astar[4];
    float ctl[VP_CTL_COUNT], sig[VP_SIG_COUNT];
} hand;

static void hand_make(hand* h) {
    memset(h, 0, sizeof *h);
    vp_sig_params* p = &h->p;
    p->batch = 2, p->n_actions = 3, p->n_branches = 2, p->n_atoms = 2;
    p->branch_size[0] = 2, p->branch_size[1] = 1, p->branch_offset[1] = 2;
    p->v_min = -1.0f, p->dz = 2.0f, p->fast_rate = 0.1f, p->slow_rate = 0.01f, p->every = 2.0f;
    p->rules = VP_SIG_RULE_TAU | VP_SIG_RULE_EPS | VP_SIG_RULE_GAMMA | VP_SIG_RULE_KELLY;
    p->tau0 = 0.005f, p->tau_min = 1e-4f, p->tau_max = 0.05f, p->div_ref = 0.1f;
    p->eps_gain = 1.0f, p->eps_min = 0.5f, p->eps_max = 2.0f;
    p->gamma0 = 0.99f, p->gamma_min = 0.9f, p->gamma_max = 0.999f, p->gamma_rate = 0.01f, p->n_step = 3;
    p->kelly_fraction = 0.5f, p->kelly_min = 0.1f;
    // rows (0,0) (0,2) (1,1): p = (0.5, 0.5), E 0, Var 1; rows (0,1) (1,0) (1,2): p = (0.25, 0.75), E 0.5, Var 0.75
    const int even[6] = {1, 0, 1, 0, 1, 0};
    for (int r = 0; r < 6; ++r) {
        h->lp[2 * r] = even[r] ? logf(0.5f) : logf(0.25f);
        h->lp[2 * r + 1] = even[r] ? logf(0.5f) : logf(0.75f);
        h->q[r] = even[r] ? 0.0f : 0.5f;
    }
    // gradient: (3, 4) on row (0,0) of branch 0, (0, 2) on row (1,2) of branch 1
    h->dlp[0] = 3.0f, h->dlp[1] = 4.0f, h->dlp[11] = 2.0f;
    const float qn[6] = {1, 1, 1, 0, 0, 0}, qt[6] = {0.5f, 1, 2, 0, 0, 1};
    memcpy(h->qn, qn, sizeof qn), memcpy(h->qt, qt, sizeof qt);
    const int32_t act[4] = {1, 0, 0, 0}, astar[4] = {0, 0, 1, 0};
    memcpy(h->act, act, sizeof act), memcpy(h->astar, astar, sizeof astar);
    h->reward[0] = 1.0f, h->reward[1] = -1.0f, h->disc[0] = 0.5f, h->disc[1] = 0.0f;
    h->stats[VP_STAT_LOSS] = 2.0f;
    h->ctl[VP_CTL_TAU] = 0.005f, h->ctl[VP_CTL_EPS_SCALE] = 1.0f, h->ctl[VP_CTL_GAMMA] = 0.99f;
    h->ctl[VP_CTL_DISC_SCALE] = 1.0f, h->ctl[VP_CTL_KELLY_CAP] = 1.0f, h->ctl[VP_CTL_LR] = 1e-3f;
    h->ctl[VP_CTL_CLIP] = 10.0f, h->ctl[VP_CTL_DRIFT_SS] = 9.0f, h->ctl[VP_CTL_PARAM_SS] = 100.0f;
    vp_sig_inputs in = {h->lp, h->dlp, h->q, h->qn, h->qt, h->act, h->astar, h->reward, h->disc, h->stats, NULL};
    h->in = in;
}

/* Adaptive atoms: E[Z] and Var[Z] on each branch's own support (branch 0 at -1 and 3, branch 1
 * at -2 and 2). Greedy rows (0,1) (1,0): p (0.25, 0.75) on (-1, 3): E 2, Var 3; (0,2): p (0.5,
 * 0.5) on (-2, 2): E 0, Var 4; (1,2): p (0.25, 0.75) on (-2, 2): E 1, Var 3. */
static void test_bus_on_a_learned_support(void) {
    hand h;
    hand_make(&h);
    const float support[4] = {-1.0f, 3.0f, -2.0f, 2.0f};
    h.in.support = support;
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    CHECK_NEAR(h.sig[VP_SIG_EDGE], 1.25, 0.0, 1e-6);
    CHECK_NEAR(h.sig[VP_SIG_EDGE_VAR], 3.25, 0.0, 1e-6);
    const double h2 = -(0.25 * log(0.25) + 0.75 * log(0.75));
    CHECK_NEAR(h.sig[VP_SIG_ENTROPY], (log(2.0) + h2) / 2, 0.0, 1e-6);
}

static void test_bus_by_hand(void) {
    hand h;
    hand_make(&h);
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    const float* s = h.sig;
    // entropies ln 2 and H2 = -(0.25 ln 0.25 + 0.75 ln 0.75), three rows each
    const double h2 = -(0.25 * log(0.25) + 0.75 * log(0.75));
    CHECK_NEAR(s[VP_SIG_ENTROPY], (log(2.0) + h2) / 2, 0.0, 1e-6);
    CHECK_NEAR(s[VP_SIG_ATOM_UTIL], (1.0 + exp(h2) / 2) / 2, 0.0, 1e-6);
    // greedy rows (0,1) (0,2) (1,0) (1,2): E 0.5, 0, 0.5, 0.5 and Var 0.75, 1, 0.75, 0.75
    CHECK_NEAR(s[VP_SIG_EDGE], 0.375, 0.0, 1e-6);
    CHECK_NEAR(s[VP_SIG_EDGE_VAR], 0.8125, 0.0, 1e-6);
    // branch gradients: |(3, 4)| = 5 and |(0, 2)| = 2; no branch 2 or 3
    CHECK(s[VP_SIG_GRAD_BR0] == 5.0f && s[VP_SIG_GRAD_BR1] == 2.0f && s[VP_SIG_GRAD_BR2] == 0.0f &&
              s[VP_SIG_GRAD_BR3] == 0.0f,
          "branch gradients %g %g %g %g", (double)s[VP_SIG_GRAD_BR0], (double)s[VP_SIG_GRAD_BR1],
          (double)s[VP_SIG_GRAD_BR2], (double)s[VP_SIG_GRAD_BR3]);
    // Q: mean 0.25, E[q^2] 0.125 -> var 0.0625; divergence (0.5 + 0 + 1 + 0 + 0 + 1) / 6
    CHECK(s[VP_SIG_Q_MEAN] == 0.25f && s[VP_SIG_Q_VAR] == 0.0625f, "Q mean %g var %g", (double)s[VP_SIG_Q_MEAN],
          (double)s[VP_SIG_Q_VAR]);
    CHECK_NEAR(s[VP_SIG_Q_DIV], 2.5 / 6, 0.0, 1e-7);
    // TD: |1 + 0.5 * 0.5 - 0.5| = 0.75, |1 + 0.5 * 2 - 0| = 2, |-1 - 0.5| = 1.5 twice: mean 1.4375
    CHECK(s[VP_SIG_TD_ABS] == 1.4375f, "td %g", (double)s[VP_SIG_TD_ABS]);
    // first step: every EMA starts at its value, trends 0; drift sqrt(9) / sqrt(100)
    CHECK(s[VP_SIG_LOSS_FAST] == 2.0f && s[VP_SIG_LOSS_SLOW] == 2.0f && s[VP_SIG_LOSS_TREND] == 0.0f &&
              s[VP_SIG_TD_FAST] == 1.4375f && s[VP_SIG_TD_SLOW] == 1.4375f && s[VP_SIG_TD_TREND] == 0.0f,
          "first EMAs");
    CHECK_NEAR(s[VP_SIG_TARGET_DRIFT], 0.3, 0.0, 1e-7);
    // no rule yet (every 2): the controls as they were, mirrored
    CHECK(s[VP_SIG_RULE_RUNS] == 0.0f && h.ctl[VP_CTL_TICK] == 1.0f && s[VP_SIG_TAU] == 0.005f &&
              s[VP_SIG_KELLY_CAP] == 1.0f && s[VP_SIG_STEPS] == 1.0f && s[VP_SIG_LR] == 1e-3f &&
              s[VP_SIG_CLIP] == 10.0f,
          "after step 1: runs %g tick %g tau %g", (double)s[VP_SIG_RULE_RUNS], (double)h.ctl[VP_CTL_TICK],
          (double)s[VP_SIG_TAU]);

    // step 2: loss 4, reward[0] 3 (TD 2.75 + 4 + 1.5 + 1.5 -> 2.4375); the rules run
    h.stats[VP_STAT_LOSS] = 4.0f;
    h.reward[0] = 3.0f;
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    const double lf = 2.0 + 0.1 * 2.0, ls = 2.0 + 0.01 * 2.0, ltr = (lf - ls) / ls;
    const double tf = 1.4375 + 0.1 * 1.0, tsl = 1.4375 + 0.01 * 1.0, ttr = (tf - tsl) / tsl;
    CHECK_NEAR(s[VP_SIG_LOSS_FAST], lf, 0.0, 1e-7);
    CHECK_NEAR(s[VP_SIG_LOSS_SLOW], ls, 0.0, 1e-7);
    CHECK_NEAR(s[VP_SIG_LOSS_TREND], ltr, 0.0, 1e-5);
    CHECK_NEAR(s[VP_SIG_TD_TREND], ttr, 0.0, 1e-5);
    CHECK(s[VP_SIG_RULE_RUNS] == 1.0f && h.ctl[VP_CTL_TICK] == 0.0f && s[VP_SIG_STEPS] == 2.0f, "rule counter");
    // tau = 0.005 * 0.1 / (q_div / (sd 0.25 + 1e-6))
    CHECK_NEAR(h.ctl[VP_CTL_TAU], 0.005 * 0.1 / ((2.5 / 6) / (0.25 + 1e-6)), 0.0, 1e-5);
    // epsilon scale 1 + td trend; gamma 0.99 - 0.01 loss trend and its discount factor ^3
    CHECK_NEAR(h.ctl[VP_CTL_EPS_SCALE], 1.0 + ttr, 0.0, 1e-6);
    const double g = 0.99 - 0.01 * ltr;
    CHECK_NEAR(h.ctl[VP_CTL_GAMMA], g, 0.0, 1e-6);
    CHECK_NEAR(h.ctl[VP_CTL_DISC_SCALE], pow(g / 0.99, 3), 0.0, 1e-6);
    // Kelly: 0.5 * 0.375 / 0.8125
    CHECK_NEAR(h.ctl[VP_CTL_KELLY_CAP], 0.5 * 0.375 / 0.8125, 0.0, 1e-6);
    CHECK(s[VP_SIG_TAU] == h.ctl[VP_CTL_TAU] && s[VP_SIG_EPS_SCALE] == h.ctl[VP_CTL_EPS_SCALE] &&
              s[VP_SIG_GAMMA] == h.ctl[VP_CTL_GAMMA] && s[VP_SIG_KELLY_CAP] == h.ctl[VP_CTL_KELLY_CAP],
          "the bus mirrors the controls");
}

/* The bounds hold, and a non-finite input leaves a control as it was. */
static void test_rule_bounds(void) {
    hand h;
    hand_make(&h);
    h.p.every = 1.0f;
    // a huge divergence: tau at tau_min; a loss rising 100-fold twice: gamma at gamma_min
    for (int r = 0; r < 6; ++r) h.qt[r] = 1e6f;
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    h.stats[VP_STAT_LOSS] = 2e4f;
    h.p.gamma_rate = 10.0f;
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    CHECK(h.ctl[VP_CTL_TAU] == 1e-4f, "tau %g (tau_min 1e-4)", (double)h.ctl[VP_CTL_TAU]);
    CHECK(h.ctl[VP_CTL_GAMMA] == 0.9f, "gamma %g (gamma_min 0.9)", (double)h.ctl[VP_CTL_GAMMA]);
    // a negative edge: the cap at kelly_min
    for (int r = 0; r < 6; ++r) h.lp[2 * r] = logf(0.75f), h.lp[2 * r + 1] = logf(0.25f);
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    CHECK(h.ctl[VP_CTL_KELLY_CAP] == 0.1f, "Kelly cap %g (kelly_min 0.1)", (double)h.ctl[VP_CTL_KELLY_CAP]);
    // NaN Q everywhere: tau stays
    const float tau = h.ctl[VP_CTL_TAU];
    for (int r = 0; r < 6; ++r) h.q[r] = NAN;
    CHECK_OK(vp_sig_cpu.bus(g_b, &h.p, &h.in, h.ctl, h.sig, NULL));
    CHECK(h.ctl[VP_CTL_TAU] == tau, "tau after NaN Q: %g", (double)h.ctl[VP_CTL_TAU]);
}

/* The epsilon factor: 0 gives the greedy actions, a factor taking epsilon to 1 or more the
 * actions of epsilon 1. The Kelly cap scales the size choice's contracts. */
static void test_factors(void) {
    const vp_action_layout lay = vp_action_layout_env();
    float q[13 * 5];
    for (int i = 0; i < 13 * 5; ++i) q[i] = (float)((i * 7) % 11) * 0.1f;
    int64_t step = 3;
    int32_t a1[20], a2[20];
    float zero = 0.0f, two = 2.0f;
    vp_tensor tq = vp_tensor_2d(q, VP_F32, VP_MEM_HOST, 5, 13), ts = vp_tensor_1d(&step, VP_I32, VP_MEM_HOST, 2);
    vp_tensor t1 = vp_tensor_2d(a1, VP_I32, VP_MEM_HOST, 5, 4), t2 = vp_tensor_2d(a2, VP_I32, VP_MEM_HOST, 5, 4);
    vp_tensor tz = vp_tensor_1d(&zero, VP_F32, VP_MEM_HOST, 1), tw = vp_tensor_1d(&two, VP_F32, VP_MEM_HOST, 1);
    vp_collect_cfg half = {0.6f, 0.6f, 0, 9, 1, VP_COLLECT_AUTO}, none = {0, 0, 0, 9, 1, VP_COLLECT_AUTO};
    vp_collect_cfg all = {1, 1, 0, 9, 1, VP_COLLECT_AUTO};
    CHECK_OK(vp_collect_act_scaled(g_b, &half, &lay, &tq, &ts, &tz, &t1));
    CHECK_OK(vp_collect_act(g_b, &none, &lay, &tq, &ts, &t2));
    CHECK(memcmp(a1, a2, sizeof a1) == 0, "epsilon x 0: not the greedy actions");
    CHECK_OK(vp_collect_act_scaled(g_b, &half, &lay, &tq, &ts, &tw, &t1));
    CHECK_OK(vp_collect_act(g_b, &all, &lay, &tq, &ts, &t2));
    CHECK(memcmp(a1, a2, sizeof a1) == 0, "epsilon 0.6 x 2 (capped at 1): not the actions of epsilon 1");
    CHECK(vp_collect_eps_scaled(0.25f, 2.0f) == 0.5f && vp_collect_eps_scaled(0.6f, 2.0f) == 1.0f,
          "scaled epsilon");
    // size choice 3 (1.0) of max_position 3 under a cap 0.5: floor(0.5 * 4 * 3 / 4 + 0.5) = 2 contracts
    vp_env_params p;
    memset(&p, 0, sizeof p);
    float cap = 0.5f, scale[2] = {1.0f, 0.5f};
    CHECK(vp_env_size_factor(&p, 0) == 1.0f, "no scale, no cap: factor 1");
    p.size_cap = &cap;
    CHECK(vp_env_scaled_contracts(3, 3, vp_env_size_factor(&p, 0)) == 2, "cap 0.5 of 3 contracts");
    p.size_scale = scale;
    CHECK(vp_env_size_factor(&p, 1) == 0.25f && vp_env_scaled_contracts(3, 4, vp_env_size_factor(&p, 1)) == 1,
          "scale 0.5 times cap 0.5 of 4 contracts");
}

/* The settings' checks name the bad field. */
static void test_cfg_check(void) {
    vp_signals_cfg c = vp_signals_cfg_default();
    CHECK_OK(vp_signals_cfg_check(&c));
    CHECK(!vp_signals_bus_on(&c), "the bus is off by default");
    c.kelly = 1;
    CHECK(vp_signals_bus_on(&c), "a rule turns the bus on");
    c = vp_signals_cfg_default();
    c.tau_min = 0.1f, c.tau_max = 0.01f;
    CHECK_STATUS(vp_signals_cfg_check(&c), VP_ERR_INVALID_ARG, "tau bounds");
    c = vp_signals_cfg_default();
    c.adapt_gamma = 1, c.gamma = 0.0f;
    CHECK_STATUS(vp_signals_cfg_check(&c), VP_ERR_INVALID_ARG, "learn.gamma");
    c = vp_signals_cfg_default();
    c.every = 0;
    CHECK_STATUS(vp_signals_cfg_check(&c), VP_ERR_INVALID_ARG, "every");
    CHECK(strcmp(vp_signal_key(VP_SIG_KELLY_CAP), "sig.kelly_cap") == 0 &&
              strcmp(vp_signal_key(VP_SIG_COUNT), "(bad signal)") == 0 && vp_signal_doc(VP_SIG_EDGE)[0] != '\0',
          "signal keys");
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_schedules);
    RUN_TEST(test_ops_in_memory);
    RUN_TEST(test_bus_by_hand);
    RUN_TEST(test_bus_on_a_learned_support);
    RUN_TEST(test_rule_bounds);
    RUN_TEST(test_factors);
    RUN_TEST(test_cfg_check);
    vp_backend_free(g_b);
    return vpt_finish();
}
