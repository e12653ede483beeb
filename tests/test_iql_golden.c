/* Golden test: one IQL update of the C trainer (vp_iql_learn, CPU) against PyTorch
 * (tools/golden_iql.py wrote tests/data/golden_iql.safetensors and, without the Mamba2 mixer,
 * golden_iql_nomamba.safetensors: the configuration, the
 * parameters and the target Q heads, features, one batch of transitions, the heads' outputs, the
 * losses, every gradient before clipping, the grad norm, the parameters after AdamW and the
 * target after the Polyak step). Tolerance: norm-wise relative error per tensor 1e-4 (1e-3 for
 * the change of the parameters, whose Adam step divides by small second moments), absolute 1e-5
 * on the scalars. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "learn/iql_impl.h"
#include "vp_test.h"

/* Number field of the configuration object. */
static double num(const cJSON* c, const char* key) {
    const cJSON* j = cJSON_GetObjectItemCaseSensitive(c, key);
    CHECK(cJSON_IsNumber(j), "config has no number '%s'", key);
    return cJSON_IsNumber(j) ? j->valuedouble : 0.0;
}

/* Norm-wise relative error of n floats against the file's tensor `name` (minus `base` when given). */
static double rel_err(const vp_st_file* f, const char* name, const float* got, int64_t n, const char* base) {
    const vp_st_entry* e = vp_st_find(f, name);
    const vp_st_entry* eb = base ? vp_st_find(f, base) : NULL;
    CHECK(e && e->dtype == VP_F32 && e->numel == n && (!base || (eb && eb->numel == n)), "file tensor %s missing or "
          "of another size", name);
    if (!e || e->numel != n || (base && (!eb || eb->numel != n))) return INFINITY;
    const float* want = (const float*)vp_st_data(f, e);
    const float* b0 = eb ? (const float*)vp_st_data(f, eb) : NULL;
    double d = 0.0, w = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double g = (double)got[i] - (b0 ? b0[i] : 0.0), x = (double)want[i] - (b0 ? b0[i] : 0.0);
        d += (g - x) * (g - x);
        w += x * x;
    }
    return isnan(d) ? INFINITY : sqrt(d) / fmax(sqrt(w), 1e-30);
}

/* A host tensor of the file's data (copied), [rows] or [rows, cols]. */
static vp_tensor from_file(const vp_st_file* f, const char* name, vp_dtype dt, int64_t rows, int64_t cols) {
    void* p = calloc((size_t)(rows * (cols ? cols : 1)), 4);
    CHECK_OK(vp_st_read(f, name, dt, rows * (cols ? cols : 1), p));
    return cols ? vp_tensor_2d(p, dt, VP_MEM_HOST, rows, cols) : vp_tensor_1d(p, dt, VP_MEM_HOST, rows);
}

/* A zeroed host tensor. */
static vp_tensor zeros(vp_dtype dt, int64_t rows, int64_t cols) {
    void* p = calloc((size_t)(rows * (cols ? cols : 1)), 4);
    return cols ? vp_tensor_2d(p, dt, VP_MEM_HOST, rows, cols) : vp_tensor_1d(p, dt, VP_MEM_HOST, rows);
}

/* The golden files: the network with the Mamba2 mixer, and without it. */
static const char* const FILES[] = {"tests/data/golden_iql.safetensors", "tests/data/golden_iql_nomamba.safetensors"};

static void golden_update(const char* path) {
    vp_st_file f;
    vp_status s = vp_st_load(&f, path);
    CHECK(s == VP_OK, "%s: %s", path, vp_last_error());
    if (s != VP_OK) return;
    cJSON* j = cJSON_Parse(vp_st_meta(&f, "config"));
    CHECK(j != NULL, "metadata 'config' missing or not JSON");
    if (!j) return;
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = (int)num(j, "n_features"), m.n_portfolio = (int)num(j, "n_portfolio");
    m.window = (int)num(j, "window"), m.hidden = (int)num(j, "hidden");
    // golden files written before model.encoder carry use_mamba (1: mamba2, 0: none)
    if (cJSON_GetObjectItemCaseSensitive(j, "encoder"))
        m.encoder = (vp_model_encoder)num(j, "encoder");
    else
        m.encoder = num(j, "use_mamba") ? VP_ENCODER_MAMBA2 : VP_ENCODER_NONE;
    m.mamba_state = (int)num(j, "mamba_state"), m.mamba_head_dim = (int)num(j, "mamba_head_dim");
    m.mamba_conv = (int)num(j, "mamba_conv"), m.head_hidden = (int)num(j, "head_hidden");
    m.n_atoms = (int)num(j, "n_atoms"), m.iqn_cos = (int)num(j, "iqn_cos");
    m.ln_eps = (float)num(j, "ln_eps"), m.rms_eps = (float)num(j, "rms_eps");
    const int64_t B = (int64_t)num(j, "batch"), T = (int64_t)num(j, "feature_rows");
    vp_iql_trainer t;
    memset(&t, 0, sizeof t);
    t.ic.batch = B, t.ic.updates = 1;
    t.ic.expectile = (float)num(j, "expectile"), t.ic.beta = (float)num(j, "beta");
    t.ic.adv_clip = (float)num(j, "adv_clip"), t.ic.tau_polyak = (float)num(j, "tau_polyak");
    t.ic.gamma = (float)num(j, "gamma");
    t.ic.adamw.lr = (float)num(j, "lr"), t.ic.adamw.beta1 = (float)num(j, "beta1");
    t.ic.adamw.beta2 = (float)num(j, "beta2"), t.ic.adamw.eps = (float)num(j, "eps");
    t.ic.adamw.weight_decay = (float)num(j, "weight_decay"), t.ic.clip_norm = (float)num(j, "clip_norm");
    cJSON_Delete(j);

    // the network with the file's parameters and target (the DQN head rows keep their initial values: unused)
    CHECK_OK(vp_backend_cpu_init(&t.backend));
    CHECK_OK(vp_iql_net_init(&t.net, t.backend, &m, 1));
    CHECK_OK(vp_iql_acts_init(&t.mb, &t.net, B, 1, 0));
    CHECK_OK(vp_iql_acts_init(&t.nx, &t.net, B, 0, 0));
    if (!t.mb || !t.nx) return;
    const int n = vp_iql_net_tensors(&t.net, NULL, NULL, NULL, 0);
    const char* names[96];
    vp_tensor views[96], gviews[96];
    CHECK(n <= 96 && vp_iql_net_tensors(&t.net, &t.net.params, names, views, 96) == n, "%d tensors", n);
    vp_iql_net_tensors(&t.net, &t.net.grads, names, gviews, 96);
    char key[160];
    for (int i = 0; i < n; ++i) {
        snprintf(key, sizeof key, "param.%s", names[i]);
        CHECK_OK(vp_st_read(&f, key, VP_F32, vp_tensor_numel(&views[i]), views[i].data));
    }
    t.target = zeros(VP_F32, t.net.n_target, 0);
    for (int h = VP_IQL_Q1_W1; h < VP_IQL_V_W1; ++h) {
        vp_tensor tv = vp_iql_target_view(&t.net, &t.target, (vp_iql_head)h);
        snprintf(key, sizeof key, "param.target.%s", vp_iql_head_name((vp_iql_head)h));
        CHECK_OK(vp_st_read(&f, key, VP_F32, vp_tensor_numel(&tv), tv.data));
    }
    // the batch's rows, the optimiser at step 0
    const int64_t P = m.n_portfolio, A = vp_model_cfg_actions(&m);
    t.features = from_file(&f, "features", VP_F32, T, m.n_features);
    t.m_bar = from_file(&f, "bar", VP_I32, B, 0), t.m_bar1 = from_file(&f, "bar1", VP_I32, B, 0);
    t.m_port = from_file(&f, "port", VP_F32, B, P), t.m_port1 = from_file(&f, "port1", VP_F32, B, P);
    t.m_act = from_file(&f, "act", VP_I32, B, 4);
    t.m_reward = from_file(&f, "reward", VP_F32, B, 0), t.m_done = from_file(&f, "done", VP_F32, B, 0);
    t.terms = zeros(VP_F32, B, VP_IQL_T_COUNT), t.d_q1 = zeros(VP_F32, B, A), t.d_q2 = zeros(VP_F32, B, A);
    t.d_logits = zeros(VP_F32, B, A), t.d_v = zeros(VP_F32, B, 0);
    t.stats = zeros(VP_F32, VP_IQL_STAT_COUNT, 0), t.grad_norm = zeros(VP_F32, 1, 0), t.clip_coef = zeros(VP_F32, 1, 0);
    t.adam_m = zeros(VP_F32, t.net.n_weights, 0), t.adam_v = zeros(VP_F32, t.net.n_weights, 0);
    t.adam_step = zeros(VP_I32, 1, 0);

    // one update
    CHECK_OK(vp_iql_learn(&t));
    const struct {
        const char* name;
        vp_iql_mlp mlp;
        int target;
        vp_iql_acts* acts;
    } outs[] = {{"out.q1", VP_IQL_MLP_Q1, 0, t.mb},  {"out.q2", VP_IQL_MLP_Q2, 0, t.mb}, {"out.qt1", VP_IQL_MLP_Q1, 1, t.mb},
                {"out.qt2", VP_IQL_MLP_Q2, 1, t.mb}, {"out.v", VP_IQL_MLP_V, 0, t.mb},   {"out.v1", VP_IQL_MLP_V, 0, t.nx},
                {"out.logits", VP_IQL_MLP_PI, 0, t.mb}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; ++i) {
        const vp_tensor o = vp_iql_out(outs[i].acts, outs[i].mlp, outs[i].target);
        const double e = rel_err(&f, outs[i].name, (const float*)o.data, vp_tensor_numel(&o), NULL);
        CHECK(e < 1e-4, "%s: relative error %.3g", outs[i].name, e);
    }
    const float* st = (const float*)t.stats.data;
    const double lv = st[VP_IQL_STAT_V] / B, lq = st[VP_IQL_STAT_Q] / B, lp = st[VP_IQL_STAT_PI] / B;
    float want[7];
    const char* sk[7] = {"out.l_v", "out.l_q", "out.l_pi", "out.loss", "out.adv", "out.w", "out.gnorm"};
    for (int i = 0; i < 7; ++i) CHECK_OK(vp_st_read(&f, sk[i], VP_F32, 1, &want[i]));
    const double got[7] = {lv, lq, lp, lv + lq + lp, st[VP_IQL_STAT_ADV] / B, st[VP_IQL_STAT_WEIGHT] / B,
                           ((const float*)t.grad_norm.data)[0]};
    for (int i = 0; i < 7; ++i) CHECK_NEAR(got[i], want[i], 1e-5, 1e-5);
    fprintf(stderr, "  %s (encoder %s): loss %.6f (PyTorch %.6f): V %.6f (%.6f), Q %.6f (%.6f), pi %.6f (%.6f); grad norm %.6f (%.6f)\n",
            path, vp_model_encoder_name(m.encoder), got[3], (double)want[3], lv, (double)want[0], lq, (double)want[1], lp, (double)want[2], got[6],
            (double)want[6]);
    // every gradient, and every parameter after the step (and its change); the target after Polyak
    double worst_g = 0.0, worst_p = 0.0, worst_d = 0.0;
    for (int i = 0; i < n; ++i) {
        snprintf(key, sizeof key, "grad.%s", names[i]);
        const double eg = rel_err(&f, key, (const float*)gviews[i].data, vp_tensor_numel(&gviews[i]), NULL);
        CHECK(eg < 1e-4, "gradient of %s: relative error %.3g", names[i], eg);
        char base[160];
        snprintf(key, sizeof key, "param_after.%s", names[i]);
        snprintf(base, sizeof base, "param.%s", names[i]);
        const double ep = rel_err(&f, key, (const float*)views[i].data, vp_tensor_numel(&views[i]), NULL);
        const double ed = rel_err(&f, key, (const float*)views[i].data, vp_tensor_numel(&views[i]), base);
        CHECK(ep < 1e-4 && ed < 1e-3, "%s after the step: relative error %.3g, of its change %.3g", names[i], ep, ed);
        worst_g = fmax(worst_g, eg), worst_p = fmax(worst_p, ep), worst_d = fmax(worst_d, ed);
    }
    for (int h = VP_IQL_Q1_W1; h < VP_IQL_V_W1; ++h) {
        const vp_tensor tv = vp_iql_target_view(&t.net, &t.target, (vp_iql_head)h);
        char base[160];
        snprintf(key, sizeof key, "param_after.target.%s", vp_iql_head_name((vp_iql_head)h));
        snprintf(base, sizeof base, "param.target.%s", vp_iql_head_name((vp_iql_head)h));
        const double ep = rel_err(&f, key, (const float*)tv.data, vp_tensor_numel(&tv), NULL);
        const double ed = rel_err(&f, key, (const float*)tv.data, vp_tensor_numel(&tv), base);
        CHECK(ep < 1e-5 && ed < 1e-3, "target %s after Polyak: relative error %.3g, of its change %.3g",
              vp_iql_head_name((vp_iql_head)h), ep, ed);
    }
    fprintf(stderr, "  %d tensors: worst relative error of a gradient %.2e, a parameter %.2e, its change %.2e\n", n,
            worst_g, worst_p, worst_d);
    vp_tensor* host[] = {&t.features, &t.m_bar, &t.m_bar1, &t.m_port, &t.m_port1, &t.m_act, &t.m_reward, &t.m_done,
                         &t.terms, &t.d_q1, &t.d_q2, &t.d_logits, &t.d_v, &t.stats, &t.grad_norm, &t.clip_coef,
                         &t.adam_m, &t.adam_v, &t.adam_step, &t.target};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; ++i) free(host[i]->data);
    vp_iql_acts_free(t.mb);
    vp_iql_acts_free(t.nx);
    vp_iql_net_free(&t.net);
    vp_backend_free(t.backend);
    vp_st_free(&f);
}

static void test_golden_update(void) {
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; ++i) golden_update(FILES[i]);
}

int main(void) {
    RUN_TEST(test_golden_update);
    return vpt_finish();
}
