/* Golden test: the Decision Transformer's forward, loss and backward (CPU) against PyTorch
 * (tools/golden_dt.py wrote tests/data/golden_dt.safetensors: the configuration, the
 * parameters, one batch of three sequences with padding and timesteps past the table, the
 * logits, the per-step loss terms and the loss, every gradient and the gradient of the
 * encoding). The encoding is an input: the encoder's own golden tests cover it. Tolerance:
 * norm-wise relative error per tensor 1e-4; absolute 1e-5 on the loss. */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "io/safetensors.h"
#include "test_dt_util.h"

static const char* const FILE_NAME = "tests/data/golden_dt.safetensors";

/* Number field of the configuration object. */
static double num(const cJSON* c, const char* key) {
    const cJSON* j = cJSON_GetObjectItemCaseSensitive(c, key);
    CHECK(cJSON_IsNumber(j), "config has no number '%s'", key);
    return cJSON_IsNumber(j) ? j->valuedouble : 0.0;
}

/* Relative error of n floats against the file's tensor `name`. */
static double err_of(const vp_st_file* f, const char* name, const float* got, int64_t n) {
    const vp_st_entry* e = vp_st_find(f, name);
    CHECK(e && e->dtype == VP_F32 && e->numel == n, "file tensor %s missing or of another size", name);
    if (!e || e->dtype != VP_F32 || e->numel != n) return INFINITY;
    return vpt_rel(got, (const float*)vp_st_data(f, e), n);
}

static void test_golden(void) {
    vp_st_file f;
    vp_status s = vp_st_load(&f, FILE_NAME);
    CHECK(s == VP_OK, "%s: %s", FILE_NAME, vp_last_error());
    if (s != VP_OK) return;
    cJSON* j = cJSON_Parse(vp_st_meta(&f, "config"));
    CHECK(j != NULL, "metadata 'config' missing or not JSON");
    if (!j) return;
    const int K = (int)num(j, "context"), D = (int)num(j, "embed"), NH = (int)num(j, "heads");
    const int layers = (int)num(j, "layers"), H = (int)num(j, "hidden"), P = (int)num(j, "n_portfolio");
    const int TM = (int)num(j, "timesteps"), B = (int)num(j, "batch");
    cJSON_Delete(j);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const vp_model_cfg mc = vpt_dt_model_cfg(H, P, 5);
    const vp_dt_dims dd = vpt_dt_dims(K, D, NH, layers, TM);
    vp_dt_net n;
    CHECK_OK(vp_dt_net_init(&n, be, &mc, &dd, 3));
    vp_dt_acts* a = NULL;
    CHECK_OK(vp_dt_acts_init(&a, &n, B, 1, 0, 0));
    if (!a) return;
    // the file's parameters: the portfolio projection and every transformer tensor
    const vp_tensor pe = vp_dt_enc_view(&n, &n.params), ge = vp_dt_enc_view(&n, &n.grads);
    vp_tensor pw = vp_model_slot(&n.enc, &pe, VP_PS_PORT_W), pb = vp_model_slot(&n.enc, &pe, VP_PS_PORT_B);
    CHECK_OK(vp_st_read(&f, "param.port.w", VP_F32, vp_tensor_numel(&pw), pw.data));
    CHECK_OK(vp_st_read(&f, "param.port.b", VP_F32, vp_tensor_numel(&pb), pb.data));
    char key[96];
    for (int i = 0; i < n.n_tensors; ++i) {
        vp_tensor v = vp_dt_view(&n, &n.params, i);
        snprintf(key, sizeof key, "param.%s", n.t[i].name);
        CHECK_OK(vp_st_read(&f, key, VP_F32, vp_tensor_numel(&v), v.data));
    }
    // the batch and the encoding
    vp_dt_batch x = vpt_dt_batch(B, K, P);
    const int64_t BK = (int64_t)B * K, BL = (int64_t)B * 3 * K, A = n.dims.A;
    vp_tensor enc = vp_tensor_2d(calloc((size_t)(BK * H), 4), VP_F32, VP_MEM_HOST, BK, H);
    CHECK_OK(vp_st_read(&f, "in.enc", VP_F32, BK * H, enc.data));
    CHECK_OK(vp_st_read(&f, "in.port", VP_F32, BK * P, x.port.data));
    CHECK_OK(vp_st_read(&f, "in.rtg", VP_F32, BK, x.rtg.data));
    CHECK_OK(vp_st_read(&f, "in.ts", VP_I32, BK, x.ts.data));
    CHECK_OK(vp_st_read(&f, "in.act", VP_I32, BK * 4, x.act.data));
    CHECK_OK(vp_st_read(&f, "in.valid", VP_F32, BK, x.valid.data));
    // forward, loss, backward
    float terms_h[64], count_h[1];
    vp_tensor terms = vp_tensor_1d(terms_h, VP_F32, VP_MEM_HOST, BK), count = vp_tensor_1d(count_h, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_dt_forward(&n, &n.params, a, &enc, &x, B));
    CHECK_OK(vp_dt_loss(&n, a, &x, &terms, &count));
    CHECK_OK(vp_dt_backward(&n, &n.params, a));
    const vp_tensor lg = vp_dt_logits(a);
    double e = err_of(&f, "out.logits", (const float*)lg.data, BL * A);
    CHECK(e < 1e-4, "logits: relative error %.3g", e);
    e = err_of(&f, "out.terms", terms_h, BK);
    CHECK(e < 1e-4, "loss terms: relative error %.3g", e);
    float want = 0.0f;
    CHECK_OK(vp_st_read(&f, "out.loss", VP_F32, 1, &want));
    double loss = 0.0;
    for (int64_t r = 0; r < BK; ++r) loss += terms_h[r];
    loss /= count_h[0];
    CHECK_NEAR(loss, want, 1e-5, 1e-5);
    // every gradient
    double worst = 0.0;
    vp_tensor gpw = vp_model_slot(&n.enc, &ge, VP_PS_PORT_W), gpb = vp_model_slot(&n.enc, &ge, VP_PS_PORT_B);
    e = err_of(&f, "grad.port.w", (const float*)gpw.data, vp_tensor_numel(&gpw));
    CHECK(e < 1e-4, "gradient of port.w: relative error %.3g", e);
    worst = fmax(worst, e);
    e = err_of(&f, "grad.port.b", (const float*)gpb.data, vp_tensor_numel(&gpb));
    CHECK(e < 1e-4, "gradient of port.b: relative error %.3g", e);
    worst = fmax(worst, e);
    for (int i = 0; i < n.n_tensors; ++i) {
        vp_tensor g = vp_dt_view(&n, &n.grads, i);
        snprintf(key, sizeof key, "grad.%s", n.t[i].name);
        e = err_of(&f, key, (const float*)g.data, vp_tensor_numel(&g));
        CHECK(e < 1e-4, "gradient of %s: relative error %.3g", n.t[i].name, e);
        worst = fmax(worst, e);
    }
    const vp_tensor de = vp_dt_d_encoding(a);
    e = err_of(&f, "grad.enc", (const float*)de.data, BK * H);
    CHECK(e < 1e-4, "gradient of the encoding: relative error %.3g", e);
    worst = fmax(worst, e);
    fprintf(stderr, "  loss %.6f (PyTorch %.6f) over %g steps; %d tensors, worst relative error of a gradient %.2e\n",
            loss, (double)want, (double)count_h[0], n.n_tensors + 3, worst);
    free(enc.data);
    vpt_dt_batch_free(&x);
    vp_dt_acts_free(a);
    vp_dt_net_free(&n);
    vp_backend_free(be);
    vp_st_free(&f);
}

int main(void) {
    RUN_TEST(test_golden);
    return vpt_finish();
}
