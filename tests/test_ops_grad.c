/* Backward ops of the CPU backend against central finite differences of double-precision
 * forwards (ops_ref.h): unary functions, softmax, log-softmax, LayerNorm (dx, dgamma,
 * dbeta) and RMSNorm (dx, dgamma). Loss L = sum(w * f(inputs)) with random w; the
 * backend's float gradient must match dL/d(input) to 1e-4 norm-wise relative error. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* Stated tolerance: ||backend - fd|| / ||fd||. */
#define GRAD_TOL 1e-4
/* Central-difference step, relative to max(|x|, 1). */
#define FD_H 1e-6

static const int64_t SIZES[][2] = {{1, 1}, {3, 7}, {4, 33}, {2, 65}};
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* A double-precision loss of the input vectors; `p` is the perturbed parameter vector. */
typedef double (*loss_fn)(void* ctx);

/* Central differences of L with respect to every element of v (n), written to grad. */
static void fd_grad(loss_fn L, void* ctx, double* v, int64_t n, double* grad) {
    for (int64_t i = 0; i < n; ++i) {
        const double x0 = v[i], h = FD_H * fmax(fabs(x0), 1.0);
        v[i] = x0 + h;
        const double lp = L(ctx);
        v[i] = x0 - h;
        const double lm = L(ctx);
        v[i] = x0;
        grad[i] = (lp - lm) / (2.0 * h);
    }
}

/* Checks a backend gradient against its finite-difference one: ||got - fd|| / ||fd||
 * below GRAD_TOL (absolute when fd is all zero). `floor` (normally 0) replaces a smaller ||fd|| for gradients that are
 * nearly zero by cancellation. */
static void check_grad_floor(const char* what, int64_t m, int64_t n, const float* got, const double* fd, int64_t len,
                             double floor) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < len; ++i) {
        num += ((double)got[i] - fd[i]) * ((double)got[i] - fd[i]);
        den += fd[i] * fd[i];
    }
    const double d = fmax(sqrt(den), floor), e = d > 0.0 ? sqrt(num) / d : sqrt(num); /* all-zero: absolute */
    CHECK(e < GRAD_TOL && !isnan(e), "%s [%lld, %lld]: rel err %.3g >= %g", what, (long long)m, (long long)n, e,
          GRAD_TOL);
}

static void check_grad(const char* what, int64_t m, int64_t n, const float* got, const double* fd, int64_t len) {
    check_grad_floor(what, m, n, got, fd, len, 0.0);
}

/* ---- unary ------------------------------------------------------------------------------- */

typedef struct unary_ctx {
    vp_unary_op op;
    const double* w; /* [n] */
    double* x;       /* [n] */
    int64_t n;
} unary_ctx;

static double unary_loss(void* p) {
    unary_ctx* c = p;
    double s = 0.0;
    for (int64_t i = 0; i < c->n; ++i) s += c->w[i] * ref_unary(c->op, c->x[i]);
    return s;
}

static void test_unary_grad(void) {
    for (int op = 0; op < VP_UNARY_COUNT; ++op)
        for (int s = 0; s < N_SIZES; ++s) {
            const int64_t n = SIZES[s][0] * SIZES[s][1];
            float *x = malloc((size_t)n * 4), *w = malloc((size_t)n * 4), *dx = ref_nan_buffer(n);
            /* spans where differences of the double forward keep ~1e-7 relative accuracy
             * (tails are checked against closed forms in test_ops_elementwise) */
            const float span = op == VP_UNARY_EXP ? 4.0f : op == VP_UNARY_SOFTPLUS ? 30.0f : 6.0f;
            ref_fill_uniform(x, n, 100 + (uint64_t)op, (uint64_t)s, -span, span);
            ref_fill_uniform(w, n, 110 + (uint64_t)op, (uint64_t)s, -1, 1);
            /* keep away from the kinks (relu at 0, softplus's switch at 20) */
            for (int64_t i = 0; i < n; ++i) {
                if (fabsf(x[i]) < 1e-2f) x[i] += 0.05f;
                if (fabsf(x[i] - 20.0f) < 1e-2f) x[i] += 0.05f;
            }
            double *xd = ref_dbuf(n), *wd = ref_dbuf(n), *fd = ref_dbuf(n);
            ref_to_double(x, n, xd);
            ref_to_double(w, n, wd);
            unary_ctx c = {(vp_unary_op)op, wd, xd, n};
            fd_grad(unary_loss, &c, xd, n, fd);
            vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, n), tw = vp_tensor_1d(w, VP_F32, VP_MEM_HOST, n);
            vp_tensor tdx = vp_tensor_1d(dx, VP_F32, VP_MEM_HOST, n);
            CHECK_OK(vp_unary_backward(g_b, (vp_unary_op)op, &tx, &tw, &tdx));
            char what[32];
            snprintf(what, sizeof what, "unary op %d", op);
            check_grad(what, 1, n, dx, fd, n);
            /* dx may alias dy */
            CHECK_OK(vp_unary_backward(g_b, (vp_unary_op)op, &tx, &tw, &tw));
            CHECK(memcmp(w, dx, (size_t)n * 4) == 0, "%s: aliased dx differs", what);
            free(x);
            free(w);
            free(dx);
            free(xd);
            free(wd);
            free(fd);
        }
}

/* ---- softmax ------------------------------------------------------------------------------- */

typedef struct rows_ctx {
    int64_t m, n;
    int is_log;
    double *x, *g, *be; /* inputs: [m, n], [n], [n] */
    const double* w;    /* [m, n] */
    double* y;          /* scratch [m, n] */
    double eps;
} rows_ctx;

static double softmax_loss(void* p) {
    rows_ctx* c = p;
    double s = 0.0;
    for (int64_t i = 0; i < c->m; ++i) ref_softmax_row(c->x + i * c->n, c->n, c->is_log, c->y + i * c->n);
    for (int64_t i = 0; i < c->m * c->n; ++i) s += c->w[i] * c->y[i];
    return s;
}

static void test_softmax_grad(void) {
    for (int is_log = 0; is_log < 2; ++is_log)
        for (int s = 0; s < N_SIZES; ++s) {
            const int64_t m = SIZES[s][0], n = SIZES[s][1];
            float *x = malloc((size_t)(m * n) * 4), *w = malloc((size_t)(m * n) * 4);
            float *y = ref_nan_buffer(m * n), *dx = ref_nan_buffer(m * n);
            ref_fill_uniform(x, m * n, 120, (uint64_t)s, -4, 4);
            ref_fill_uniform(w, m * n, 121, (uint64_t)s, -1, 1);
            double *xd = ref_dbuf(m * n), *wd = ref_dbuf(m * n), *yd = ref_dbuf(m * n), *fd = ref_dbuf(m * n);
            ref_to_double(x, m * n, xd);
            ref_to_double(w, m * n, wd);
            rows_ctx c = {m, n, is_log, xd, NULL, NULL, wd, yd, 0};
            fd_grad(softmax_loss, &c, xd, m * n, fd);
            vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, m, n), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, m, n);
            vp_tensor tw = vp_tensor_2d(w, VP_F32, VP_MEM_HOST, m, n), tdx = vp_tensor_2d(dx, VP_F32, VP_MEM_HOST, m, n);
            /* backward from the backend's own forward output */
            if (is_log) {
                CHECK_OK(vp_log_softmax(g_b, &tx, &ty));
                CHECK_OK(vp_log_softmax_backward(g_b, &ty, &tw, &tdx));
            } else {
                CHECK_OK(vp_softmax(g_b, &tx, &ty));
                CHECK_OK(vp_softmax_backward(g_b, &ty, &tw, &tdx));
            }
            check_grad(is_log ? "log_softmax dx" : "softmax dx", m, n, dx, fd, m * n);
            free(x);
            free(w);
            free(y);
            free(dx);
            free(xd);
            free(wd);
            free(yd);
            free(fd);
        }
}

/* ---- LayerNorm / RMSNorm ----------------------------------------------------------------------- */

static double layernorm_loss(void* p) {
    rows_ctx* c = p;
    ref_layernorm(c->x, c->g, c->be, c->eps, c->m, c->n, c->y, NULL, NULL);
    double s = 0.0;
    for (int64_t i = 0; i < c->m * c->n; ++i) s += c->w[i] * c->y[i];
    return s;
}

static double rmsnorm_loss(void* p) {
    rows_ctx* c = p;
    ref_rmsnorm(c->x, c->g, c->eps, c->m, c->n, c->y, NULL);
    double s = 0.0;
    for (int64_t i = 0; i < c->m * c->n; ++i) s += c->w[i] * c->y[i];
    return s;
}

/* LayerNorm (ln = 1) or RMSNorm (ln = 0): dx, dgamma (and dbeta) against differences. */
static void check_norm_grad(int ln, int64_t m, int64_t n, uint64_t seed) {
    const float eps = 1e-5f;
    float *x = malloc((size_t)(m * n) * 4), *w = malloc((size_t)(m * n) * 4);
    float *g = malloc((size_t)n * 4), *be = malloc((size_t)n * 4);
    float *y = ref_nan_buffer(m * n), *dx = ref_nan_buffer(m * n);
    float *dg = ref_nan_buffer(n), *db = ref_nan_buffer(n), *mean = ref_nan_buffer(m), *rstd = ref_nan_buffer(m);
    ref_fill_uniform(x, m * n, seed, 1, -2, 2);
    ref_fill_uniform(w, m * n, seed, 2, -1, 1);
    ref_fill_uniform(g, n, seed, 3, 0.5f, 1.5f);
    ref_fill_uniform(be, n, seed, 4, -0.5f, 0.5f);
    double *xd = ref_dbuf(m * n), *wd = ref_dbuf(m * n), *gd = ref_dbuf(n), *bd = ref_dbuf(n), *yd = ref_dbuf(m * n);
    double *fdx = ref_dbuf(m * n), *fdg = ref_dbuf(n), *fdb = ref_dbuf(n);
    ref_to_double(x, m * n, xd);
    ref_to_double(w, m * n, wd);
    ref_to_double(g, n, gd);
    ref_to_double(be, n, bd);
    rows_ctx c = {m, n, 0, xd, gd, bd, wd, yd, eps};
    loss_fn L = ln ? layernorm_loss : rmsnorm_loss;
    fd_grad(L, &c, xd, m * n, fdx);
    fd_grad(L, &c, gd, n, fdg);
    if (ln) fd_grad(L, &c, bd, n, fdb);
    vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, m, n), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, m, n);
    vp_tensor tw = vp_tensor_2d(w, VP_F32, VP_MEM_HOST, m, n), tdx = vp_tensor_2d(dx, VP_F32, VP_MEM_HOST, m, n);
    vp_tensor tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, n), tb = vp_tensor_1d(be, VP_F32, VP_MEM_HOST, n);
    vp_tensor tdg = vp_tensor_1d(dg, VP_F32, VP_MEM_HOST, n), tdb = vp_tensor_1d(db, VP_F32, VP_MEM_HOST, n);
    vp_tensor tm = vp_tensor_1d(mean, VP_F32, VP_MEM_HOST, m), tr = vp_tensor_1d(rstd, VP_F32, VP_MEM_HOST, m);
    /* forward for the saved statistics, then backward (twice: dgamma/dbeta are overwritten) */
    for (int rep = 0; rep < 2; ++rep) {
        if (ln) {
            CHECK_OK(vp_layernorm(g_b, &tx, &tg, &tb, eps, &ty, &tm, &tr));
            CHECK_OK(vp_layernorm_backward(g_b, &tw, &tx, &tg, &tm, &tr, &tdx, &tdg, &tdb));
        } else {
            CHECK_OK(vp_rmsnorm(g_b, &tx, &tg, eps, &ty, &tr));
            CHECK_OK(vp_rmsnorm_backward(g_b, &tw, &tx, &tg, &tr, &tdx, &tdg));
        }
    }
    /* RMSNorm of one column: y = gamma * sign(x) up to eps, so the true dx is ~eps/x^2
     * small and float rstd's rounding dominates it; there the error is measured against
     * ||dy * gamma * rstd||, the size of each term before they cancel. */
    double floor = 0.0;
    if (!ln && n == 1) {
        for (int64_t i = 0; i < m; ++i) floor += pow((double)w[i] * g[0] * rstd[i], 2.0);
        floor = sqrt(floor);
    }
    check_grad_floor(ln ? "layernorm dx" : "rmsnorm dx", m, n, dx, fdx, m * n, floor);
    check_grad(ln ? "layernorm dgamma" : "rmsnorm dgamma", m, n, dg, fdg, n);
    if (ln) check_grad("layernorm dbeta", m, n, db, fdb, n);
    free(x);
    free(w);
    free(g);
    free(be);
    free(y);
    free(dx);
    free(dg);
    free(db);
    free(mean);
    free(rstd);
    free(xd);
    free(wd);
    free(gd);
    free(bd);
    free(yd);
    free(fdx);
    free(fdg);
    free(fdb);
}

static void test_norm_grad(void) {
    for (int s = 0; s < N_SIZES; ++s)
        for (int ln = 0; ln < 2; ++ln) check_norm_grad(ln, SIZES[s][0], SIZES[s][1], 130 + (uint64_t)s);
    /* more rows than one column block of the parameter-gradient sum */
    check_norm_grad(1, 70, 3, 140);
    check_norm_grad(0, 9, 130, 141);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_unary_grad);
    RUN_TEST(test_softmax_grad);
    RUN_TEST(test_norm_grad);
    vp_backend_free(g_b);
    return vpt_finish();
}
