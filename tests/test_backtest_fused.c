/* The fused CUDA path's heads math, checked on the CPU: the portfolio terms folded into the
 * first layers (W1 Wp, W1 bp + b1) and the Q-values computed the kernel's way (hidden units
 * from W1 e + c + M p, second layers, dueling logits, Q = sum z e^(l - max) / sum
 * e^(l - max)) against the model's own heads (vp_model_heads), on random encodings and
 * portfolios, at several sizes (odd ones included). */
#include "rollout/rollout_impl.h"
#include "vp_test.h"
#include "vulpes/rng.h"

static void check_size(int hidden, int head_hidden, int atoms, uint64_t seed) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg c = vp_model_cfg_default();
    c.hidden = hidden, c.mamba_head_dim = hidden, c.head_hidden = head_hidden, c.n_atoms = atoms, c.iqn_cos = 8;
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &c, seed));
    vp_model_acts* acts = NULL;
    CHECK_OK(vp_model_acts_init(&acts, &m, 1, 0, 0));
    const int A = vp_model_cfg_actions(&c);
    float* e = (float*)malloc(sizeof(float) * (size_t)hidden);
    float p[8], want[64], got[64];
    double worst = 0.0;
    int same_choice = 0;
    for (int n = 0; n < 40; ++n) {
        // a random encoding (about unit scale, as after the trunk) and a portfolio in range
        for (int i = 0; i < hidden; ++i) e[i] = 2.0f * vp_rng_normal(seed, 1, (uint64_t)(n * 4096 + i));
        for (int i = 0; i < 8; ++i) p[i] = (float)vp_rng_uniform(seed, 2, (uint64_t)(n * 8 + i)) * 2.0f - 1.0f;
        vp_tensor et = vp_tensor_2d(e, VP_F32, VP_MEM_HOST, 1, hidden), pt = vp_tensor_2d(p, VP_F32, VP_MEM_HOST, 1, 8);
        CHECK_OK(vp_model_heads(&m, &m.params, acts, &et, &pt, NULL, 1));
        memcpy(want, vp_model_q(acts).data, sizeof(float) * (size_t)A);
        CHECK_OK(vp_ro_fused_reference(&m, &m.params, e, p, got));
        for (int a = 0; a < A; ++a) {
            // Q lives on the support [-10, 10]: errors are measured against its width
            double d = fabs((double)got[a] - want[a]) / (double)(c.v_max - c.v_min);
            worst = d > worst ? d : worst;
        }
        // the greedy choices agree (the Q gaps are far above float rounding here)
        const vp_action_layout lay = vp_action_layout_env();
        int32_t aw[4], ag[4];
        vp_action_greedy(&lay, want, aw);
        vp_action_greedy(&lay, got, ag);
        same_choice += memcmp(aw, ag, sizeof aw) == 0;
    }
    CHECK(worst < 1e-6, "H %d, HH %d, Z %d: largest Q difference %g of the support's width", hidden, head_hidden,
          atoms, worst);
    CHECK(same_choice >= 39, "H %d: %d of 40 choices agree", hidden, same_choice);
    free(e);
    vp_model_acts_free(acts);
    vp_model_free(&m);
    vp_backend_free(b);
}

static void test_fused_heads_math(void) {
    check_size(16, 16, 11, 1);
    check_size(24, 13, 7, 2);
    check_size(64, 32, 51, 3);
    check_size(256, 128, 51, 4);
}

/* Folding: M = W1 Wp and c = W1 bp + b1 against a direct product, element by element. */
static void test_fold(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg c = vp_model_cfg_default();
    c.hidden = 20, c.mamba_head_dim = 10, c.head_hidden = 9, c.n_atoms = 5, c.iqn_cos = 4;
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &c, 7));
    float out[2 * 9 * 8 + 2 * 9];
    CHECK_OK(vp_ro_fold_heads(&m, &m.params, out));
    const float* pw = (const float*)m.params.data + vp_model_find_param(&m, "port.w")->offset;
    const float* pb = (const float*)m.params.data + vp_model_find_param(&m, "port.b")->offset;
    const char* w1n[2] = {"c51.v1.w", "c51.a1.w"}, *b1n[2] = {"c51.v1.b", "c51.a1.b"};
    for (int k = 0; k < 2; ++k) {
        const float* w1 = (const float*)m.params.data + vp_model_find_param(&m, w1n[k])->offset;
        const float* b1 = (const float*)m.params.data + vp_model_find_param(&m, b1n[k])->offset;
        for (int j = 0; j < 9; ++j) {
            double cj = b1[j];
            for (int i = 0; i < 20; ++i) cj += (double)w1[j * 20 + i] * pb[i];
            CHECK_NEAR(out[2 * 9 * 8 + k * 9 + j], cj, 1e-6, 1e-6);
            for (int q = 0; q < 8; ++q) {
                double mq = 0.0;
                for (int i = 0; i < 20; ++i) mq += (double)w1[j * 20 + i] * pw[i * 8 + q];
                CHECK_NEAR(out[(k * 9 + j) * 8 + q], mq, 1e-6, 1e-6);
            }
        }
    }
    vp_model_free(&m);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_fold);
    RUN_TEST(test_fused_heads_math);
    return vpt_finish();
}
