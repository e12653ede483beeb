/* The Decision Transformer's network on the CPU: the causal mask (a token never sees a later
 * one: every input of later steps and the action of the step itself changed, the logits of every
 * earlier token unchanged bit for bit), the padding (a shorter sequence's logits equal those of the
 * same steps with padding after them), and the backward against central finite differences of
 * the loss (float32; tolerance 2e-2 relative on each checked entry, 1e-3 absolute). */
#include <stdio.h>

#include "test_dt_util.h"

/* A network of K steps, width D, NH heads, `layers` blocks on backend be. */
static void make(vp_backend* be, vp_dt_net* n, int K, int D, int NH, int layers, uint64_t seed) {
    const vp_model_cfg mc = vpt_dt_model_cfg(6, 8, 5);
    const vp_dt_dims dd = vpt_dt_dims(K, D, NH, layers, 16);
    CHECK_OK(vp_dt_net_init(n, be, &mc, &dd, seed));
}

/* A random encoding [BK, H]. */
static vp_tensor random_enc(int64_t BK, int H, uint64_t seed) {
    vp_tensor e = vp_tensor_2d(calloc((size_t)(BK * H), 4), VP_F32, VP_MEM_HOST, BK, H);
    for (int64_t k = 0; k < BK * H; ++k) ((float*)e.data)[k] = vp_rng_normal(seed, 9, (uint64_t)k);
    return e;
}

static void test_causal(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const int K = 5, B = 2, H = 6, P = 8;
    vp_dt_net n;
    make(be, &n, K, 16, 4, 2, 11);
    vp_dt_acts* a = NULL;
    CHECK_OK(vp_dt_acts_init(&a, &n, B, 0, 0, 0));
    if (!a) return;
    const int64_t L = 3 * K, A = n.dims.A;
    vp_dt_batch x = vpt_dt_batch(B, K, P);
    vpt_dt_batch_random(&x, P, 5);
    vp_tensor e = random_enc(B * K, H, 6);
    CHECK_OK(vp_dt_forward(&n, &n.params, a, &e, &x, B));
    float* ref = (float*)malloc(sizeof(float) * (size_t)(B * L * A));
    memcpy(ref, vp_dt_logits(a).data, sizeof(float) * (size_t)(B * L * A));
    int checked = 0;
    for (int j0 = 0; j0 < K; ++j0) {
        // change the action of step j0 and everything of the steps after it, in sequence 0 only
        vp_dt_batch y = vpt_dt_batch(B, K, P);
        memcpy(y.port.data, x.port.data, sizeof(float) * (size_t)(B * K * P));
        memcpy(y.act.data, x.act.data, sizeof(int32_t) * (size_t)(B * K * 4));
        memcpy(y.rtg.data, x.rtg.data, sizeof(float) * (size_t)(B * K));
        memcpy(y.ts.data, x.ts.data, sizeof(int32_t) * (size_t)(B * K));
        memcpy(y.valid.data, x.valid.data, sizeof(float) * (size_t)(B * K));
        vp_tensor f = random_enc(B * K, H, 6);
        int32_t* ya = (int32_t*)y.act.data;
        ya[j0 * 4 + 0] = (ya[j0 * 4 + 0] + 1) % 3;
        for (int j = j0 + 1; j < K; ++j) {
            ((float*)y.rtg.data)[j] += 3.0f;
            ((int32_t*)y.ts.data)[j] += 2;
            for (int k = 0; k < P; ++k) ((float*)y.port.data)[j * P + k] -= 1.0f;
            for (int k = 0; k < H; ++k) ((float*)f.data)[j * H + k] *= -2.0f;
            ya[j * 4 + 1] = (ya[j * 4 + 1] + 1) % 4;
        }
        CHECK_OK(vp_dt_forward(&n, &n.params, a, &f, &y, B));
        const float* got = (const float*)vp_dt_logits(a).data;
        // tokens up to the state token of step j0 keep their logits exactly; sequence 1 entirely
        const int64_t keep = 3 * j0 + 2;
        for (int64_t t = 0; t < keep * A; ++t) CHECK(got[t] == ref[t], "step %d: token %lld of sequence 0 changed", j0, (long long)(t / A));
        for (int64_t t = L * A; t < 2 * L * A; ++t) CHECK(got[t] == ref[t], "step %d: sequence 1 changed", j0);
        // and a later token does change (the test can fail)
        int moved = 0;
        for (int64_t t = keep * A; t < L * A; ++t) moved |= got[t] != ref[t];
        CHECK(moved || j0 == K - 1, "step %d: no later token changed", j0);
        checked += (int)keep;
        free(f.data);
        vpt_dt_batch_free(&y);
    }
    fprintf(stderr, "  %d earlier tokens unchanged bit for bit over %d cut points\n", checked, K);
    free(ref);
    free(e.data);
    vpt_dt_batch_free(&x);
    vp_dt_acts_free(a);
    vp_dt_net_free(&n);
    vp_backend_free(be);
}

/* The loss of n's current parameters on batch x, encoding e (double of the float terms). */
static double loss_of(vp_dt_net* n, vp_dt_acts* a, const vp_tensor* e, const vp_dt_batch* x, int64_t B) {
    float terms[256], cnt[1];
    vp_tensor t = vp_tensor_1d(terms, VP_F32, VP_MEM_HOST, B * n->dims.K), c = vp_tensor_1d(cnt, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_dt_forward(n, &n->params, a, e, x, B));
    CHECK_OK(vp_dt_loss(n, a, x, &t, &c));
    double s = 0.0;
    for (int64_t r = 0; r < B * n->dims.K; ++r) s += terms[r];
    return s / cnt[0];
}

static void test_finite_differences(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const int K = 3, B = 2, H = 6, P = 8;
    vp_dt_net n;
    make(be, &n, K, 8, 2, 1, 21);
    vp_dt_acts* a = NULL;
    CHECK_OK(vp_dt_acts_init(&a, &n, B, 1, 0, 0));
    if (!a) return;
    vp_dt_batch x = vpt_dt_batch(B, K, P);
    vpt_dt_batch_random(&x, P, 8);
    ((float*)x.valid.data)[5] = 0.0f; /* padding at the end of sequence 1 */
    vp_tensor e = random_enc(B * K, H, 4);
    // LayerNorm gains away from one, so that every path carries a gradient of its own
    for (int i = 0; i < n.n_tensors; ++i) {
        vp_tensor v = vp_dt_view(&n, &n.params, i);
        if (strstr(n.t[i].name, "ln") && n.t[i].name[strlen(n.t[i].name) - 1] == 'g')
            for (int64_t k = 0; k < vp_tensor_numel(&v); ++k) ((float*)v.data)[k] = 1.0f + 0.3f * vp_rng_normal(3, (uint64_t)i, (uint64_t)k);
    }
    (void)loss_of(&n, a, &e, &x, B);
    CHECK_OK(vp_dt_backward(&n, &n.params, a));
    float* g = (float*)malloc(sizeof(float) * (size_t)n.n_weights);
    memcpy(g, n.grads.data, sizeof(float) * (size_t)n.n_weights);
    float* p = (float*)n.params.data;
    int checked = 0, bad = 0;
    double worst = 0.0;
    for (int i = 0; i < n.n_tensors; ++i) {
        // a few entries of every tensor (the timestep table: its used rows)
        const int64_t numel = n.t[i].rows * (n.t[i].cols ? n.t[i].cols : 1);
        for (int s = 0; s < 4; ++s) {
            const int64_t k = n.t[i].off + (int64_t)(vp_rng_uniform(17, (uint64_t)i, (uint64_t)s) * (float)(numel < 48 ? numel : 48));
            const float keep = p[k], h = 1e-2f;
            p[k] = keep + h;
            const double up = loss_of(&n, a, &e, &x, B);
            p[k] = keep - h;
            const double dn = loss_of(&n, a, &e, &x, B);
            p[k] = keep;
            const double fd = (up - dn) / (2.0 * h), err = fabs(fd - g[k]);
            const int ok = err <= 1e-3 + 2e-2 * fabs(fd);
            bad += !ok;
            CHECK(ok, "%s[%lld]: backward %.6g, finite difference %.6g", n.t[i].name, (long long)(k - n.t[i].off),
                  (double)g[k], fd);
            worst = fmax(worst, err / fmax(fabs(fd), 1e-3));
            ++checked;
        }
    }
    fprintf(stderr, "  %d entries of %d tensors against finite differences, %d off; worst relative gap %.2e\n", checked,
            n.n_tensors, bad, worst);
    free(g);
    free(e.data);
    vpt_dt_batch_free(&x);
    vp_dt_acts_free(a);
    vp_dt_net_free(&n);
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_causal);
    RUN_TEST(test_finite_differences);
    return vpt_finish();
}
