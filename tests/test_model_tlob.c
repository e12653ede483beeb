/* The TLOB encoder (src/model/model_tlob.c) on the CPU:
 *  - golden: the forward and the gradients of a linear loss against PyTorch
 *    (tools/golden_tlob.py wrote tests/data/golden_tlob.safetensors), tensor by tensor;
 *  - the encoder's backward (every tlob.* tensor and d h2) against central finite
 *    differences of the double reference (tests/tlob_ref.h), at other shapes;
 *  - forward-only activations give the bits of training ones; the FLOP count; the
 *    configuration's refusals. */
#include <cjson/cJSON.h>

#include "io/safetensors.h"
#include "test_model_util.h"

/* Norm-wise tolerance of the golden comparison: float32 vs float64 through 2 blocks. */
#define GOLD_TOL 2e-5

/* A small TLOB network with K, H and the TLOB extents; the other parts are small too. */
static vp_model_cfg tlob_cfg(int K, int H, int blocks, int heads, int fheads, int mlp) {
    vp_model_cfg c = tmu_cfg((tmu_dims){.F = 3, .P = 2, .K = K, .H = H, .head_hidden = 5, .Z = 5, .v_min = -2.0f,
                                        .v_max = 2.0f, .n_cos = 4, .branches = {2, 3}});
    c.encoder = VP_ENCODER_TLOB;
    c.tlob_blocks = blocks;
    c.tlob_heads = heads;
    c.tlob_feature_heads = fheads;
    c.tlob_mlp = mlp;
    return c;
}

/* Number field `key` of a JSON object (0 and a failed check when absent). */
static double num(const cJSON* j, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, key);
    CHECK(cJSON_IsNumber(v), "config has no number '%s'", key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* Norm-wise relative error of got [n] (float) against want [n] (float). */
static double rel_err_f(const float* got, const float* want, int64_t n) {
    double d = 0, w = 0;
    for (int64_t i = 0; i < n; ++i) {
        d += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    return sqrt(d / (w > 0 ? w : 1e-300));
}

/* Reads tensor `name` of n floats from f into a new buffer (NULL and a failed check on error). */
static float* read_f32(const vp_st_file* f, const char* name, int64_t n) {
    float* v = (float*)malloc(sizeof(float) * (size_t)n);
    vp_status s = v ? vp_st_read(f, name, VP_F32, n, v) : VP_ERR_OOM;
    CHECK(s == VP_OK, "%s: %s", name, vp_last_error());
    if (s != VP_OK) {
        free(v);
        return NULL;
    }
    return v;
}

static void test_golden(void) {
    const char* path = "tests/data/golden_tlob.safetensors";
    vp_st_file f;
    vp_status s = vp_st_load(&f, path);
    CHECK(s == VP_OK, "%s: %s", path, vp_last_error());
    if (s != VP_OK) return;
    cJSON* j = cJSON_Parse(vp_st_meta(&f, "config") ? vp_st_meta(&f, "config") : "");
    CHECK(j != NULL, "metadata 'config' missing or not JSON");
    if (!j) {
        vp_st_free(&f);
        return;
    }
    const int K = (int)num(j, "window"), H = (int)num(j, "hidden");
    const int64_t B = (int64_t)num(j, "batch");
    vp_model_cfg c = tlob_cfg(K, H, (int)num(j, "tlob_blocks"), (int)num(j, "tlob_heads"),
                              (int)num(j, "tlob_feature_heads"), (int)num(j, "tlob_mlp"));
    c.ln_eps = (float)num(j, "ln_eps");
    CHECK((int)num(j, "encoder") == VP_ENCODER_TLOB, "the golden file's encoder is not tlob");
    cJSON_Delete(j);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model m;
    CHECK_OK(vp_model_init(&m, be, &c, 5));
    vp_model_acts* a = NULL;
    CHECK_OK(vp_model_acts_init(&a, &m, B, 0, 1));
    if (!a) {
        vp_model_free(&m);
        vp_backend_free(be);
        vp_st_free(&f);
        return;
    }
    // the golden parameters into the tlob.* rows (each checked for its size by vp_st_read)
    int n_tlob = 0;
    char name[96];
    for (int k = 0; k < m.n_params; ++k) {
        const vp_param_info* p = &m.info[k];
        if (strncmp(p->name, "tlob.", 5) != 0) continue;
        snprintf(name, sizeof name, "param.%s", p->name);
        CHECK_OK(vp_st_read(&f, name, VP_F32, p->numel, (float*)m.params.data + p->offset));
        n_tlob++;
    }
    CHECK(n_tlob == 25, "%d tlob.* tensors in the table, expected 25", n_tlob);
    // forward from the golden trunk rows: the encoding
    CHECK_OK(vp_st_read(&f, "h2", VP_F32, B * K * H, a->h2.data));
    CHECK_OK(vp_model_tlob_forward(&m, &m.params, a, B));
    float* want = read_f32(&f, "out.e", B * H);
    double err = want ? rel_err_f((const float*)a->e.data, want, B * H) : 1.0;
    CHECK(err < GOLD_TOL, "encoding vs PyTorch: rel err %.3g", err);
    fprintf(stderr, "  golden: encoding rel err %.2g\n", err);
    free(want);
    // backward of sum(w * e): every tlob.* gradient and d h2
    CHECK_OK(vp_st_read(&f, "w", VP_F32, B * H, a->d_h.data));
    CHECK_OK(vp_model_tlob_backward(&m, &m.params, a, B));
    double worst = 0;
    for (int k = 0; k < m.n_params; ++k) {
        const vp_param_info* p = &m.info[k];
        if (strncmp(p->name, "tlob.", 5) != 0) continue;
        snprintf(name, sizeof name, "grad.%s", p->name);
        float* g = read_f32(&f, name, p->numel);
        double e = g ? rel_err_f((const float*)m.grads.data + p->offset, g, p->numel) : 1.0;
        CHECK(e < GOLD_TOL, "%s: rel err %.3g against PyTorch", name, e);
        worst = e > worst ? e : worst;
        free(g);
    }
    float* gh = read_f32(&f, "grad.h2", B * K * H);
    double eh = gh ? rel_err_f((const float*)a->d_t1.data, gh, B * K * H) : 1.0;
    CHECK(eh < GOLD_TOL, "d h2: rel err %.3g against PyTorch", eh);
    fprintf(stderr, "  golden: worst parameter gradient rel err %.2g, d h2 %.2g\n", worst, eh);
    free(gh);
    vp_model_acts_free(a);
    vp_model_free(&m);
    vp_backend_free(be);
    vp_st_free(&f);
}

/* The encoder alone: perturbed parameters, trunk rows and a linear loss on e. */
typedef struct enc_case {
    vp_model m;
    double* p;   /* [n_weights] double copy of the parameters */
    double* h2;  /* [B K, H] */
    double* w;   /* [B, H] loss weights */
    int64_t B;
} enc_case;

/* sum(w * e) of the double reference. */
static double enc_loss(void* ctx) {
    const enc_case* k = (const enc_case*)ctx;
    const int64_t n = k->B * k->m.cfg.hidden;
    double* e = ref_alloc(n);
    ref_tlob(&k->m, k->p, k->h2, k->B, e);
    double L = ref_dot(k->w, e, n);
    free(e);
    return L;
}

/* C forward vs the double reference, C backward vs central differences of it. */
static void check_fd(int K, int H, int blocks, int heads, int fheads, int mlp, int64_t B, uint64_t seed) {
    vp_model_cfg c = tlob_cfg(K, H, blocks, heads, fheads, mlp);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    enc_case k;
    memset(&k, 0, sizeof k);
    k.B = B;
    CHECK_OK(vp_model_init(&k.m, be, &c, seed));
    vp_model_acts* a = NULL;
    CHECK_OK(vp_model_acts_init(&a, &k.m, B, 0, 1));
    if (!a) {
        vp_model_free(&k.m);
        vp_backend_free(be);
        return;
    }
    // parameters plus noise (norm weights off 1, biases off 0), trunk rows, loss weights
    k.p = ref_alloc(k.m.n_weights);
    ref_from_f32(k.p, k.m.params.data, k.m.n_weights);
    for (int i = 0; i < k.m.n_params; ++i) {
        const vp_param_info* pi = &k.m.info[i];
        for (int64_t t = 0; t < pi->numel; ++t) k.p[pi->offset + t] += ref_uniform(seed, 300 + i, t, -0.3, 0.3);
    }
    ref_to_f32(k.m.params.data, k.p, k.m.n_weights);
    ref_from_f32(k.p, k.m.params.data, k.m.n_weights);
    const int64_t R = B * K, nh = R * H;
    k.h2 = ref_alloc(nh);
    k.w = ref_alloc(B * H);
    ref_fill(k.h2, nh, seed + 1, 0.0, 2.0);
    ref_fill(k.w, B * H, seed + 2, -1.0, 1.0);
    ref_to_f32(a->h2.data, k.h2, nh);
    ref_from_f32(k.h2, a->h2.data, nh);
    ref_to_f32(a->d_h.data, k.w, B * H);
    ref_from_f32(k.w, a->d_h.data, B * H);
    // forward vs the reference
    CHECK_OK(vp_model_tlob_forward(&k.m, &k.m.params, a, B));
    double* e_ref = ref_alloc(B * H);
    double* e_got = ref_alloc(B * H);
    ref_tlob(&k.m, k.p, k.h2, B, e_ref);
    ref_from_f32(e_got, a->e.data, B * H);
    const double fe = ref_rel_err(e_got, e_ref, B * H);
    CHECK(fe < FWD_TOL, "K %d H %d: encoding vs the double reference: rel err %.3g", K, H, fe);
    fprintf(stderr, "  K %d H %d blocks %d heads %d/%d mlp %d B %lld: encoding rel err %.2g\n", K, H, blocks, heads,
            fheads, mlp, (long long)B, fe);
    // backward vs finite differences: every tlob.* tensor, then d h2
    CHECK_OK(vp_model_tlob_backward(&k.m, &k.m.params, a, B));
    int checked = 0;
    for (int i = 0; i < k.m.n_params; ++i) {
        const vp_param_info* pi = &k.m.info[i];
        if (strncmp(pi->name, "tlob.", 5) != 0) continue;
        double* fd = ref_alloc(pi->numel);
        ref_fd(enc_loss, &k, k.p + pi->offset, pi->numel, FD_EPS, fd);
        tmu_check_grad(pi->name, (const float*)k.m.grads.data + pi->offset, fd, pi->numel);
        free(fd);
        checked++;
    }
    CHECK(checked == 25, "%d tlob.* tensors checked, expected 25", checked);
    double* fd = ref_alloc(nh);
    ref_fd(enc_loss, &k, k.h2, nh, FD_EPS, fd);
    tmu_check_grad("d h2", (const float*)a->d_t1.data, fd, nh);
    free(fd);
    free(e_ref);
    free(e_got);
    free(k.p);
    free(k.h2);
    free(k.w);
    vp_model_acts_free(a);
    vp_model_free(&k.m);
    vp_backend_free(be);
}

static void test_fd_small(void) { check_fd(3, 4, 1, 2, 1, 2, 2, 31); }
static void test_fd_two_blocks(void) { check_fd(4, 6, 2, 3, 2, 3, 3, 41); }

/* A network's encodings from forward-only activations (one block's rows reused) and from
 * training ones (every block kept) are the same bits. */
static void test_forward_only(void) {
    vp_model_cfg c = tlob_cfg(5, 8, 3, 2, 1, 2);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model m;
    CHECK_OK(vp_model_init(&m, be, &c, 9));
    vp_model_acts *fa = NULL, *ta = NULL;
    const int64_t B = 6, rows = 20;
    CHECK_OK(vp_model_acts_init(&fa, &m, B, 0, 0));
    CHECK_OK(vp_model_acts_init(&ta, &m, B, 0, 1));
    if (!fa || !ta) {
        vp_model_acts_free(fa);
        vp_model_acts_free(ta);
        vp_model_free(&m);
        vp_backend_free(be);
        return;
    }
    CHECK(fa->tl_stored == 1 && ta->tl_stored == 3, "stored blocks %d / %d", fa->tl_stored, ta->tl_stored);
    CHECK(vp_model_acts_bytes(fa) < vp_model_acts_bytes(ta), "forward-only activations are not smaller");
    float feat[20 * 3];
    int32_t bar[6] = {0, 3, 7, 11, 15, 19};
    for (int i = 0; i < rows * 3; ++i) feat[i] = (float)sin(0.37 * i) * 1.5f;
    vp_tensor tf = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, rows, 3), tb = vp_tensor_1d(bar, VP_I32, VP_MEM_HOST, B);
    CHECK_OK(vp_model_encode(&m, &m.params, fa, &tf, &tb, B));
    CHECK_OK(vp_model_encode(&m, &m.params, ta, &tf, &tb, B));
    vp_tensor e1 = vp_model_encoding(fa), e2 = vp_model_encoding(ta);
    CHECK(e1.data && e2.data && memcmp(e1.data, e2.data, sizeof(float) * (size_t)(B * 8)) == 0,
          "forward-only and training encodings differ");
    // a backward needs every block's rows
    CHECK_STATUS(vp_model_tlob_backward(&m, &m.params, fa, B), VP_ERR_STATE, "forward only");
    vp_model_acts_free(fa);
    vp_model_acts_free(ta);
    vp_model_free(&m);
    vp_backend_free(be);
}

/* vp_model_tlob_flops by hand, and what vp_model_flops adds for the encoder. */
static void test_flops(void) {
    vp_model_cfg c = tlob_cfg(4, 8, 2, 2, 1, 2);
    const double B = 3;
    // temporal side: n = 12 rows of 8, L 4; feature side: n = 24 rows of 4, L 8
    const double t = 2.0 * 12 * (4 * 64 + 2 * 2 * 64) + 4.0 * 12 * 4 * 8;
    const double f = 2.0 * 24 * (4 * 16 + 2 * 2 * 16) + 4.0 * 24 * 8 * 4;
    CHECK_NEAR(vp_model_tlob_flops(&c, B), 2 * (t + f), 0, 1e-12);
    // against the network without an encoder: trunk rows for K - 1 more steps, and the blocks
    vp_model_cfg n = c;
    n.encoder = VP_ENCODER_NONE;
    const double extra = B * 3, F = c.n_features, H = c.hidden, tl = 2 * (t + f);
    const double fwd = vp_model_flops(&c, 3, 0, 0) - vp_model_flops(&n, 3, 0, 0);
    const double fb = vp_model_flops(&c, 3, 0, 1) - vp_model_flops(&n, 3, 0, 1);
    CHECK_NEAR(fwd, 2 * extra * H * F + 2 * extra * H * H + tl, 0, 1e-12);
    CHECK_NEAR(fb, 2 * (2 * extra * H * F) + 3 * (2 * extra * H * H) + 3 * tl, 0, 1e-12);
    CHECK(vp_model_tlob_flops(&n, B) == 0.0, "TLOB FLOPs without TLOB");
}

/* The configuration's refusals, each naming the field. */
static void test_cfg_check(void) {
    vp_model_cfg c = tlob_cfg(4, 8, 2, 2, 1, 2);
    CHECK_OK(vp_model_cfg_check(&c));
    c.tlob_heads = 3;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "tlob_heads (3) dividing hidden (8)");
    c = tlob_cfg(4, 8, 2, 2, 3, 2);
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "tlob_feature_heads (3) dividing window (4)");
    c = tlob_cfg(4, 8, 0, 2, 1, 2);
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "tlob_blocks = 0");
    c = tlob_cfg(4, 8, 2, 2, 1, 17);
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "tlob_mlp = 17");
    c = tlob_cfg(4, 512, 2, 4, 1, 2);
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "hidden = 512 tokens, at most 256");
    // the TLOB fields do not matter to the other encoders
    c.encoder = VP_ENCODER_NONE;
    CHECK_OK(vp_model_cfg_check(&c));
    c.encoder = VP_ENCODER_COUNT;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "encoder = 3");
    CHECK(strcmp(vp_model_encoder_name(VP_ENCODER_TLOB), "tlob") == 0 &&
              strcmp(vp_model_encoder_name(VP_ENCODER_COUNT), "?") == 0, "encoder names");
}

int main(void) {
    RUN_TEST(test_golden);
    RUN_TEST(test_fd_small);
    RUN_TEST(test_fd_two_blocks);
    RUN_TEST(test_forward_only);
    RUN_TEST(test_flops);
    RUN_TEST(test_cfg_check);
    return vpt_finish();
}
