/* Golden test: one PPO minibatch update of the C trainer (vp_ppo_update, CPU) against PyTorch
 * (tools/golden_ppo.py wrote tests/data/golden_ppo.safetensors and, without the Mamba2 mixer,
 * golden_ppo_nomamba.safetensors: the configuration, the
 * parameters, features, one minibatch with the collection's log-probabilities and values,
 * the logits and values, the loss and its terms, every gradient before clipping, the grad
 * norm and the parameters after AdamW). Tolerance: norm-wise relative error per tensor 1e-4
 * (1e-3 for the change of the parameters, whose Adam step divides by small second moments),
 * absolute 1e-5 on the scalars. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "learn/ppo_impl.h"
#include "vp_test.h"

/* The golden files: the network with the Mamba2 mixer, and without it. */
static const char* const FILES[] = {"tests/data/golden_ppo.safetensors", "tests/data/golden_ppo_nomamba.safetensors"};

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
    const int64_t M = (int64_t)num(j, "minibatch"), T = (int64_t)num(j, "feature_rows");
    vp_ppo_trainer t;
    memset(&t, 0, sizeof t);
    t.pc.epochs = 1, t.pc.minibatches = 1, t.pc.norm_adv = 1;
    t.pc.clip = (float)num(j, "clip"), t.pc.vf_clip = (float)num(j, "vf_clip");
    t.pc.ent_coef = (float)num(j, "ent_coef"), t.pc.vf_coef = (float)num(j, "vf_coef");
    t.pc.adamw.lr = (float)num(j, "lr"), t.pc.adamw.beta1 = (float)num(j, "beta1");
    t.pc.adamw.beta2 = (float)num(j, "beta2"), t.pc.adamw.eps = (float)num(j, "eps");
    t.pc.adamw.weight_decay = (float)num(j, "weight_decay"), t.pc.clip_norm = (float)num(j, "clip_norm");
    cJSON_Delete(j);

    // the network with the file's parameters (the DQN head rows keep their initial values: unused)
    CHECK_OK(vp_backend_cpu_init(&t.backend));
    CHECK_OK(vp_ppo_net_init(&t.net, t.backend, &m, 1));
    CHECK_OK(vp_ppo_acts_init(&t.mb, &t.net, M, 1, 0));
    if (!t.mb) return;
    const int n = vp_ppo_net_tensors(&t.net, NULL, NULL, NULL, 0);
    const char* names[64];
    vp_tensor views[64], gviews[64];
    CHECK(n <= 64 && vp_ppo_net_tensors(&t.net, &t.net.params, names, views, 64) == n, "%d tensors", n);
    vp_ppo_net_tensors(&t.net, &t.net.grads, names, gviews, 64);
    char key[160];
    for (int i = 0; i < n; ++i) {
        snprintf(key, sizeof key, "param.%s", names[i]);
        CHECK_OK(vp_st_read(&f, key, VP_F32, vp_tensor_numel(&views[i]), views[i].data));
    }
    // the minibatch as the rollout's rows, the identity permutation, the optimiser at step 0
    t.features = from_file(&f, "features", VP_F32, T, m.n_features);
    t.r_bar = from_file(&f, "bar_idx", VP_I32, M, 0);
    t.r_port = from_file(&f, "portfolio", VP_F32, M, m.n_portfolio);
    t.r_act = from_file(&f, "actions", VP_I32, M, 4);
    t.r_logp = from_file(&f, "old_logp", VP_F32, M, 0);
    t.r_value = from_file(&f, "old_value", VP_F32, M, 0);
    t.r_adv = from_file(&f, "adv", VP_F32, M, 0);
    t.r_ret = from_file(&f, "ret", VP_F32, M, 0);
    t.perm = zeros(VP_I32, M, 0);
    for (int64_t k = 0; k < M; ++k) ((int32_t*)t.perm.data)[k] = (int32_t)k;
    t.m_bar = zeros(VP_I32, M, 0), t.m_port = zeros(VP_F32, M, m.n_portfolio), t.m_act = zeros(VP_I32, M, 4);
    t.m_logp = zeros(VP_F32, M, 0), t.m_value = zeros(VP_F32, M, 0), t.m_adv = zeros(VP_F32, M, 0);
    t.m_ret = zeros(VP_F32, M, 0);
    const int64_t A = vp_model_cfg_actions(&m);
    t.terms = zeros(VP_F32, M, VP_PPO_T_COUNT), t.d_logits = zeros(VP_F32, M, A), t.d_values = zeros(VP_F32, M, 0);
    t.stats = zeros(VP_F32, VP_PPO_STAT_COUNT, 0), t.grad_norm = zeros(VP_F32, 1, 0), t.clip_coef = zeros(VP_F32, 1, 0);
    t.adam_m = zeros(VP_F32, t.net.n_weights, 0), t.adam_v = zeros(VP_F32, t.net.n_weights, 0);
    t.adam_step = zeros(VP_I32, 1, 0);

    // one update
    CHECK_OK(vp_ppo_update(&t, 0));
    const vp_tensor lg = vp_ppo_logits(t.mb), v = vp_ppo_values(t.mb);
    double e = rel_err(&f, "out.logits", (const float*)lg.data, M * A, NULL);
    CHECK(e < 1e-4, "logits: relative error %.3g", e);
    e = rel_err(&f, "out.value", (const float*)v.data, M, NULL);
    CHECK(e < 1e-4, "values: relative error %.3g", e);
    const float* st = (const float*)t.stats.data;
    const double pg = st[VP_PPO_STAT_PG] / M, vl = st[VP_PPO_STAT_V] / M, en = st[VP_PPO_STAT_ENT] / M;
    const double kl = st[VP_PPO_STAT_KL] / M, loss = pg + t.pc.vf_coef * vl - t.pc.ent_coef * en;
    float want[6];
    const char* sk[6] = {"out.pg", "out.v", "out.ent", "out.kl", "out.loss", "out.gnorm"};
    for (int i = 0; i < 6; ++i) CHECK_OK(vp_st_read(&f, sk[i], VP_F32, 1, &want[i]));
    const double got[6] = {pg, vl, en, kl, loss, ((const float*)t.grad_norm.data)[0]};
    for (int i = 0; i < 6; ++i) CHECK_NEAR(got[i], want[i], 1e-5, 1e-5);
    fprintf(stderr, "  %s (encoder %s): loss %.6f (PyTorch %.6f), approx_kl %.6f (%.6f), grad norm %.6f (%.6f)\n",
            path, vp_model_encoder_name(m.encoder), loss, (double)want[4], kl, (double)want[3], got[5], (double)want[5]);
    // every gradient, and every parameter after the step (and its change)
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
    fprintf(stderr, "  %d tensors: worst relative error of a gradient %.2e, a parameter %.2e, its change %.2e\n", n,
            worst_g, worst_p, worst_d);
    vp_tensor* host[] = {&t.features, &t.r_bar, &t.r_port, &t.r_act, &t.r_logp, &t.r_value, &t.r_adv, &t.r_ret,
                         &t.perm, &t.m_bar, &t.m_port, &t.m_act, &t.m_logp, &t.m_value, &t.m_adv, &t.m_ret,
                         &t.terms, &t.d_logits, &t.d_values, &t.stats, &t.grad_norm, &t.clip_coef, &t.adam_m,
                         &t.adam_v, &t.adam_step};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; ++i) free(host[i]->data);
    vp_ppo_acts_free(t.mb);
    vp_ppo_net_free(&t.net);
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
