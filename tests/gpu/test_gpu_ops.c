/* GPU parity of every op except GEMM (test_gpu_gemm.c): each CUDA op against the CPU op
 * on fresh random inputs at several sizes, odd ones included, outputs poisoned with NaN
 * first. Tolerance: FP32 ops 1e-5 norm-wise relative; fills, copies and conversions
 * bit for bit. Runs on a GPU machine only. */
#include "gpu_twin.h"

/* FP32 ops: ||gpu - cpu|| / ||cpu||. */
#define TOL_FP32 1e-5

/* Element counts for element-wise ops (odd, tail-only, several float4 bodies, large). */
static const int64_t NUMELS[] = {1, 3, 1000, 4097, 1048579};
#define N_NUMELS (int)(sizeof NUMELS / sizeof NUMELS[0])

/* Row shapes [m, n]: single elements, odd widths, warp-per-row and block-per-row paths,
 * many rows (several column chunks in the parameter-gradient reductions). */
static const int64_t ROWS[][2] = {{1, 1}, {7, 13}, {64, 51}, {257, 256}, {33, 1031}, {5000, 96}, {3, 4099}};
#define N_ROWS (int)(sizeof ROWS / sizeof ROWS[0])

static void test_fill_copy_convert(void) {
    char cas[64];
    for (int s = 0; s < N_NUMELS; ++s) {
        const int64_t n = NUMELS[s];
        twin x, xi, y, bf, back;
        twin_1d(&x, VP_F32, n);
        twin_1d(&xi, VP_I32, n);
        twin_1d(&y, VP_F32, n);
        twin_1d(&bf, VP_BF16, n);
        twin_1d(&back, VP_F32, n);
        snprintf(cas, sizeof cas, "n=%lld", (long long)n);
        /* fills */
        CHECK_OK(vp_fill(g_cpu, &x.h, -2.75f));
        CHECK_OK(vp_fill(g_gpu, &x.d, -2.75f));
        twin_check_bits("fill", cas, &x);
        CHECK_OK(vp_fill_i32(g_cpu, &xi.h, -123456));
        CHECK_OK(vp_fill_i32(g_gpu, &xi.d, -123456));
        twin_check_bits("fill_i32", cas, &xi);
        /* copy (f32 and bf16, whose byte count need not be a multiple of 16) */
        twin_rand(&x, -3.0f, 3.0f);
        twin_poison(&y);
        CHECK_OK(vp_copy(g_cpu, &x.h, &y.h));
        CHECK_OK(vp_copy(g_gpu, &x.d, &y.d));
        twin_check_bits("copy f32", cas, &y);
        /* convert f32 -> bf16 -> f32 */
        CHECK_OK(vp_convert(g_cpu, &x.h, &bf.h));
        CHECK_OK(vp_convert(g_gpu, &x.d, &bf.d));
        twin_check_bits("convert f32->bf16", cas, &bf);
        twin_poison(&back);
        CHECK_OK(vp_convert(g_cpu, &bf.h, &back.h));
        CHECK_OK(vp_convert(g_gpu, &bf.d, &back.d));
        twin_check_bits("convert bf16->f32", cas, &back);
        twin_rand(&bf, -5.0f, 5.0f);
        twin x2;
        twin_1d(&x2, VP_BF16, n);
        CHECK_OK(vp_copy(g_cpu, &bf.h, &x2.h));
        CHECK_OK(vp_copy(g_gpu, &bf.d, &x2.d));
        twin_check_bits("copy bf16", cas, &x2);
        twin_free(&x2);
        twin_free(&x), twin_free(&xi), twin_free(&y), twin_free(&bf), twin_free(&back);
    }
    /* special values: NaN stays NaN, infinities and ties round as RNE says */
    const float sp[8] = {NAN, -NAN, INFINITY, -INFINITY, 1.0f, 1.00390625f, 1.01171875f, 3.4e38f};
    twin v, vb;
    twin_1d(&v, VP_F32, 8);
    twin_1d(&vb, VP_BF16, 8);
    memcpy(v.h.data, sp, sizeof sp);
    twin_push(&v);
    CHECK_OK(vp_convert(g_cpu, &v.h, &vb.h));
    CHECK_OK(vp_convert(g_gpu, &v.d, &vb.d));
    twin_check_bits("convert f32->bf16", "NaN, inf, ties, overflow", &vb);
    uint16_t* got = (uint16_t*)twin_fetch(&vb);
    if (got) {
        CHECK((got[0] & 0x7fffu) > 0x7f80u && (got[1] & 0x7fffu) > 0x7f80u, "NaN stays NaN: %04x %04x", got[0], got[1]);
        CHECK(got[2] == 0x7f80u && got[3] == 0xff80u, "infinities: %04x %04x", got[2], got[3]);
        CHECK(got[5] == 0x3f80u && got[6] == 0x3f82u, "ties to even: %04x %04x", got[5], got[6]);
        CHECK(got[7] == 0x7f80u, "3.4e38 rounds to inf: %04x", got[7]);
        free(got);
    }
    twin_free(&v), twin_free(&vb);
}

static void test_unary(void) {
    static const char* names[VP_UNARY_COUNT] = {"relu", "silu", "softplus", "sigmoid", "exp", "tanh", "gelu"};
    char op[64], cas[64];
    for (int u = 0; u < VP_UNARY_COUNT; ++u) {
        /* exp stays finite; the others cross softplus's linear threshold at 20 */
        const float lim = u == VP_UNARY_EXP ? 6.0f : 25.0f;
        for (int s = 0; s < N_NUMELS; ++s) {
            const int64_t n = NUMELS[s];
            twin x, dy, y, dx;
            twin_1d(&x, VP_F32, n), twin_1d(&dy, VP_F32, n), twin_1d(&y, VP_F32, n), twin_1d(&dx, VP_F32, n);
            twin_rand(&x, -lim, lim);
            twin_rand(&dy, -1.0f, 1.0f);
            snprintf(cas, sizeof cas, "n=%lld", (long long)n);
            twin_poison(&y);
            CHECK_OK(vp_unary(g_cpu, (vp_unary_op)u, &x.h, &y.h));
            CHECK_OK(vp_unary(g_gpu, (vp_unary_op)u, &x.d, &y.d));
            snprintf(op, sizeof op, "unary %s", names[u]);
            twin_check(op, cas, &y, TOL_FP32);
            twin_poison(&dx);
            CHECK_OK(vp_unary_backward(g_cpu, (vp_unary_op)u, &x.h, &dy.h, &dx.h));
            CHECK_OK(vp_unary_backward(g_gpu, (vp_unary_op)u, &x.d, &dy.d, &dx.d));
            snprintf(op, sizeof op, "unary_bwd %s", names[u]);
            twin_check(op, cas, &dx, TOL_FP32);
            /* in place, on a view one element in (not 16-byte aligned) */
            if (n > 1) {
                vp_tensor xh = vp_tensor_1d((float*)x.h.data + 1, VP_F32, VP_MEM_HOST, n - 1);
                vp_tensor xd = vp_tensor_1d((float*)x.d.data + 1, VP_F32, VP_MEM_DEVICE, n - 1);
                CHECK_OK(vp_unary(g_cpu, (vp_unary_op)u, &xh, &xh));
                CHECK_OK(vp_unary(g_gpu, (vp_unary_op)u, &xd, &xd));
                snprintf(op, sizeof op, "unary %s", names[u]);
                snprintf(cas, sizeof cas, "n=%lld in place, offset 1", (long long)n);
                twin_check(op, cas, &x, TOL_FP32);
            }
            twin_free(&x), twin_free(&dy), twin_free(&y), twin_free(&dx);
        }
    }
}

static void test_binary_axpby_scale(void) {
    static const char* names[VP_BINARY_COUNT] = {"add", "sub", "mul"};
    char op[64], cas[64];
    for (int r = 0; r < N_ROWS; ++r) {
        const int64_t m = ROWS[r][0], n = ROWS[r][1];
        twin a, full, row, c, s;
        twin_2d(&a, VP_F32, m, n), twin_2d(&full, VP_F32, m, n), twin_1d(&row, VP_F32, n);
        twin_2d(&c, VP_F32, m, n), twin_1d(&s, VP_F32, 1);
        twin_rand(&a, -2.0f, 2.0f), twin_rand(&full, -2.0f, 2.0f), twin_rand(&row, -2.0f, 2.0f);
        for (int o = 0; o < VP_BINARY_COUNT; ++o) {
            for (int bc = 0; bc < 2; ++bc) {
                twin* bb = bc ? &row : &full;
                twin_poison(&c);
                CHECK_OK(vp_binary(g_cpu, (vp_binary_op)o, &a.h, &bb->h, &c.h));
                CHECK_OK(vp_binary(g_gpu, (vp_binary_op)o, &a.d, &bb->d, &c.d));
                snprintf(op, sizeof op, "binary %s", names[o]);
                snprintf(cas, sizeof cas, "[%lld, %lld]%s", (long long)m, (long long)n, bc ? " row broadcast" : "");
                twin_check(op, cas, &c, TOL_FP32);
            }
        }
        snprintf(cas, sizeof cas, "[%lld, %lld]", (long long)m, (long long)n);
        /* axpby with beta == 0 must not read the NaN in y */
        twin_poison(&c);
        CHECK_OK(vp_axpby(g_cpu, 1.5f, &a.h, 0.0f, &c.h));
        CHECK_OK(vp_axpby(g_gpu, 1.5f, &a.d, 0.0f, &c.d));
        twin_check("axpby beta=0", cas, &c, TOL_FP32);
        CHECK_OK(vp_axpby(g_cpu, -0.5f, &full.h, 0.75f, &c.h));
        CHECK_OK(vp_axpby(g_gpu, -0.5f, &full.d, 0.75f, &c.d));
        twin_check("axpby", cas, &c, TOL_FP32);
        /* scale by a scalar that lives on the device */
        twin_rand(&s, -3.0f, 3.0f);
        CHECK_OK(vp_scale_by(g_cpu, &c.h, &s.h));
        CHECK_OK(vp_scale_by(g_gpu, &c.d, &s.d));
        twin_check("scale_by", cas, &c, TOL_FP32);
        twin_free(&a), twin_free(&full), twin_free(&row), twin_free(&c), twin_free(&s);
    }
}

static void test_softmax(void) {
    char cas[64];
    for (int r = 0; r < N_ROWS; ++r) {
        const int64_t m = ROWS[r][0], n = ROWS[r][1];
        twin x, y, ly, dy, dx;
        twin_2d(&x, VP_F32, m, n), twin_2d(&y, VP_F32, m, n), twin_2d(&ly, VP_F32, m, n);
        twin_2d(&dy, VP_F32, m, n), twin_2d(&dx, VP_F32, m, n);
        twin_rand(&x, -8.0f, 8.0f), twin_rand(&dy, -1.0f, 1.0f);
        snprintf(cas, sizeof cas, "[%lld, %lld]", (long long)m, (long long)n);
        twin_poison(&y), twin_poison(&ly);
        CHECK_OK(vp_softmax(g_cpu, &x.h, &y.h));
        CHECK_OK(vp_softmax(g_gpu, &x.d, &y.d));
        twin_check("softmax", cas, &y, TOL_FP32);
        CHECK_OK(vp_log_softmax(g_cpu, &x.h, &ly.h));
        CHECK_OK(vp_log_softmax(g_gpu, &x.d, &ly.d));
        twin_check("log_softmax", cas, &ly, TOL_FP32);
        twin_poison(&dx);
        CHECK_OK(vp_softmax_backward(g_cpu, &y.h, &dy.h, &dx.h));
        CHECK_OK(vp_softmax_backward(g_gpu, &y.d, &dy.d, &dx.d));
        twin_check("softmax_bwd", cas, &dx, TOL_FP32);
        twin_poison(&dx);
        CHECK_OK(vp_log_softmax_backward(g_cpu, &ly.h, &dy.h, &dx.h));
        CHECK_OK(vp_log_softmax_backward(g_gpu, &ly.d, &dy.d, &dx.d));
        twin_check("log_softmax_bwd", cas, &dx, TOL_FP32);
        /* in place */
        CHECK_OK(vp_softmax(g_cpu, &x.h, &x.h));
        CHECK_OK(vp_softmax(g_gpu, &x.d, &x.d));
        twin_check("softmax in place", cas, &x, TOL_FP32);
        twin_free(&x), twin_free(&y), twin_free(&ly), twin_free(&dy), twin_free(&dx);
    }
}

/* Checks a norm's dx. With one column the exact dx is 0 (LayerNorm: x - mean = 0) or
 * rstd dy gamma (1 - xhat^2) with xhat = +-1 up to eps (RMSNorm): pure cancellation, so
 * it is measured against the size of rstd dy gamma instead of against itself. */
static void check_norm_dx(const char* op, const char* cas, twin* dx, const twin* rs, const twin* dy, const twin* g,
                          int64_t m, int64_t n) {
    if (n > 1) {
        twin_check(op, cas, dx, TOL_FP32);
        return;
    }
    double sc = 0.0;
    for (int64_t i = 0; i < m; ++i) {
        double t = (double)((float*)rs->h.data)[i] * ((float*)dy->h.data)[i] * ((float*)g->h.data)[0];
        sc += t * t;
    }
    twin_check_scaled(op, "[m, 1]: vs ||rstd dy gamma||", dx, TOL_FP32, sqrt(sc));
}

static void test_norms(void) {
    char cas[64];
    for (int r = 0; r < N_ROWS; ++r) {
        const int64_t m = ROWS[r][0], n = ROWS[r][1];
        twin x, g, be, y, mu, rs, dy, dx, dg, db;
        twin_2d(&x, VP_F32, m, n), twin_1d(&g, VP_F32, n), twin_1d(&be, VP_F32, n), twin_2d(&y, VP_F32, m, n);
        twin_1d(&mu, VP_F32, m), twin_1d(&rs, VP_F32, m), twin_2d(&dy, VP_F32, m, n), twin_2d(&dx, VP_F32, m, n);
        twin_1d(&dg, VP_F32, n), twin_1d(&db, VP_F32, n);
        twin_rand(&x, -3.0f, 5.0f), twin_rand(&g, 0.5f, 1.5f), twin_rand(&be, -1.0f, 1.0f), twin_rand(&dy, -1.0f, 1.0f);
        snprintf(cas, sizeof cas, "[%lld, %lld]", (long long)m, (long long)n);
        /* LayerNorm forward: y, mean, rstd */
        twin_poison(&y), twin_poison(&mu), twin_poison(&rs);
        CHECK_OK(vp_layernorm(g_cpu, &x.h, &g.h, &be.h, 1e-5f, &y.h, &mu.h, &rs.h));
        CHECK_OK(vp_layernorm(g_gpu, &x.d, &g.d, &be.d, 1e-5f, &y.d, &mu.d, &rs.d));
        twin_check("layernorm y", cas, &y, TOL_FP32);
        twin_check("layernorm mean", cas, &mu, TOL_FP32);
        twin_check("layernorm rstd", cas, &rs, TOL_FP32);
        /* the same with the ReLU in the pass */
        twin_poison(&y);
        CHECK_OK(vp_layernorm_relu(g_cpu, &x.h, &g.h, &be.h, 1e-5f, &y.h, &mu.h, &rs.h));
        CHECK_OK(vp_layernorm_relu(g_gpu, &x.d, &g.d, &be.d, 1e-5f, &y.d, &mu.d, &rs.d));
        twin_check("layernorm_relu y", cas, &y, TOL_FP32);
        /* LayerNorm backward from the CPU's saved statistics on both sides */
        CHECK_OK(vp_upload(g_gpu, &mu.d, mu.h.data, (size_t)m * 4));
        CHECK_OK(vp_upload(g_gpu, &rs.d, rs.h.data, (size_t)m * 4));
        twin_poison(&dx), twin_poison(&dg), twin_poison(&db);
        CHECK_OK(vp_layernorm_backward(g_cpu, &dy.h, &x.h, &g.h, &mu.h, &rs.h, &dx.h, &dg.h, &db.h));
        CHECK_OK(vp_layernorm_backward(g_gpu, &dy.d, &x.d, &g.d, &mu.d, &rs.d, &dx.d, &dg.d, &db.d));
        check_norm_dx("layernorm_bwd dx", cas, &dx, &rs, &dy, &g, m, n);
        twin_check("layernorm_bwd dgamma", cas, &dg, TOL_FP32);
        twin_check("layernorm_bwd dbeta", cas, &db, TOL_FP32);
        /* RMSNorm forward and backward */
        twin_poison(&y), twin_poison(&rs);
        CHECK_OK(vp_rmsnorm(g_cpu, &x.h, &g.h, 1e-6f, &y.h, &rs.h));
        CHECK_OK(vp_rmsnorm(g_gpu, &x.d, &g.d, 1e-6f, &y.d, &rs.d));
        twin_check("rmsnorm y", cas, &y, TOL_FP32);
        twin_check("rmsnorm rstd", cas, &rs, TOL_FP32);
        CHECK_OK(vp_upload(g_gpu, &rs.d, rs.h.data, (size_t)m * 4));
        twin_poison(&dx), twin_poison(&dg);
        CHECK_OK(vp_rmsnorm_backward(g_cpu, &dy.h, &x.h, &g.h, &rs.h, &dx.h, &dg.h));
        CHECK_OK(vp_rmsnorm_backward(g_gpu, &dy.d, &x.d, &g.d, &rs.d, &dx.d, &dg.d));
        check_norm_dx("rmsnorm_bwd dx", cas, &dx, &rs, &dy, &g, m, n);
        twin_check("rmsnorm_bwd dgamma", cas, &dg, TOL_FP32);
        twin_free(&x), twin_free(&g), twin_free(&be), twin_free(&y), twin_free(&mu), twin_free(&rs);
        twin_free(&dy), twin_free(&dx), twin_free(&dg), twin_free(&db);
    }
}

static void test_reductions(void) {
    static const char* names[VP_REDUCE_COUNT] = {"sum", "sumsq", "max"};
    static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {257, 256}, {33, 1031}, {100003, 3}, {3, 1000003}, {4096, 548}};
    char op[64], cas[64];
    for (size_t r = 0; r < sizeof shapes / sizeof shapes[0]; ++r) {
        const int64_t m = shapes[r][0], n = shapes[r][1];
        twin x, rows, cols, all;
        twin_2d(&x, VP_F32, m, n), twin_1d(&rows, VP_F32, m), twin_1d(&cols, VP_F32, n), twin_1d(&all, VP_F32, 1);
        twin_rand(&x, -1.0f, 1.0f);
        snprintf(cas, sizeof cas, "[%lld, %lld]", (long long)m, (long long)n);
        for (int o = 0; o < VP_REDUCE_COUNT; ++o) {
            twin_poison(&rows), twin_poison(&cols), twin_poison(&all);
            CHECK_OK(vp_reduce_rows(g_cpu, (vp_reduce_op)o, &x.h, &rows.h));
            CHECK_OK(vp_reduce_rows(g_gpu, (vp_reduce_op)o, &x.d, &rows.d));
            snprintf(op, sizeof op, "reduce_rows %s", names[o]);
            twin_check(op, cas, &rows, TOL_FP32);
            CHECK_OK(vp_reduce_cols(g_cpu, (vp_reduce_op)o, &x.h, &cols.h));
            CHECK_OK(vp_reduce_cols(g_gpu, (vp_reduce_op)o, &x.d, &cols.d));
            snprintf(op, sizeof op, "reduce_cols %s", names[o]);
            twin_check(op, cas, &cols, TOL_FP32);
            CHECK_OK(vp_reduce_all(g_cpu, (vp_reduce_op)o, &x.h, &all.h));
            CHECK_OK(vp_reduce_all(g_gpu, (vp_reduce_op)o, &x.d, &all.d));
            snprintf(op, sizeof op, "reduce_all %s", names[o]);
            if (o == VP_REDUCE_SUM) {
                /* a float sum of n terms with cancellation: its error is bounded by
                 * eps log2(n) sum |x| (pairwise order), not by |sum|; measure it against
                 * sum |x| with 1e-6 (about 16 x eps for n up to 3M) */
                double l1 = 0.0;
                for (int64_t i = 0; i < m * n; ++i) l1 += fabs((double)((float*)x.h.data)[i]);
                twin_check_scaled(op, "vs sum |x|, tol 1e-6", &all, 1e-6, l1);
            } else {
                twin_check(op, cas, &all, TOL_FP32);
            }
        }
        /* MAX lets a NaN through */
        ((float*)x.h.data)[(m * n) / 2] = NAN;
        twin_push(&x);
        twin_poison_with(&all, 0.0f);
        CHECK_OK(vp_reduce_all(g_cpu, VP_REDUCE_MAX, &x.h, &all.h));
        CHECK_OK(vp_reduce_all(g_gpu, VP_REDUCE_MAX, &x.d, &all.d));
        twin_check_ex("reduce_all max", "one NaN inside: NaN out", &all, TOL_FP32, 1);
        CHECK(isnan(((float*)all.h.data)[0]), "the CPU max of a NaN is NaN");
        twin_free(&x), twin_free(&rows), twin_free(&cols), twin_free(&all);
    }
}

static void test_gather(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {10, 13, 7}, {1000, 64, 4097}, {517, 51, 8192}};
    char cas[64];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        const int64_t r = shapes[s][0], n = shapes[s][1], m = shapes[s][2];
        twin src, idx, out;
        twin_2d(&src, VP_F32, r, n), twin_1d(&idx, VP_I32, m), twin_2d(&out, VP_F32, m, n);
        twin_rand(&src, -1.0f, 1.0f);
        /* indices in [-2, r + 2): a few fall outside and must give NaN rows */
        twin_rand(&idx, -2.0f, (float)r + 2.0f);
        snprintf(cas, sizeof cas, "src [%lld, %lld], %lld rows", (long long)r, (long long)n, (long long)m);
        /* poisoned with +inf here, since NaN is a legal output of this op */
        twin_poison_with(&out, INFINITY);
        CHECK_OK(vp_gather_rows(g_cpu, &src.h, &idx.h, &out.h));
        CHECK_OK(vp_gather_rows(g_gpu, &src.d, &idx.d, &out.d));
        twin_check_ex("gather_rows", cas, &out, 0.0, 1);
        twin_free(&src), twin_free(&idx), twin_free(&out);
    }
}

static void test_optimiser(void) {
    static const int64_t sizes[] = {1, 5, 4099, 1000003};
    char cas[64];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const int64_t n = sizes[s];
        twin p, g, m, v, step, scale, norm, coef;
        twin_1d(&p, VP_F32, n), twin_1d(&g, VP_F32, n), twin_1d(&m, VP_F32, n), twin_1d(&v, VP_F32, n);
        twin_1d(&step, VP_I32, 1), twin_1d(&scale, VP_F32, 1), twin_1d(&norm, VP_F32, 1), twin_1d(&coef, VP_F32, 1);
        twin_rand(&p, -1.0f, 1.0f), twin_rand(&g, -0.1f, 0.1f), twin_rand(&m, -0.01f, 0.01f);
        twin_rand(&v, 0.0f, 1e-4f), twin_rand(&scale, 0.2f, 1.0f);
        /* step counter: 3 after two increments from 1, on both sides */
        CHECK_OK(vp_fill_i32(g_cpu, &step.h, 1));
        CHECK_OK(vp_fill_i32(g_gpu, &step.d, 1));
        for (int i = 0; i < 2; ++i) {
            CHECK_OK(vp_step_increment(g_cpu, &step.h));
            CHECK_OK(vp_step_increment(g_gpu, &step.d));
        }
        snprintf(cas, sizeof cas, "n=%lld", (long long)n);
        twin_check_bits("step_increment", cas, &step);
        /* AdamW with decay and a clip coefficient, then plain Adam */
        vp_adamw_cfg cfg = {1e-3f, 0.9f, 0.999f, 1.5e-4f, 0.01f};
        CHECK_OK(vp_adamw(g_cpu, &cfg, &p.h, &g.h, &m.h, &v.h, &step.h, &scale.h));
        CHECK_OK(vp_adamw(g_gpu, &cfg, &p.d, &g.d, &m.d, &v.d, &step.d, &scale.d));
        twin_check("adamw param", cas, &p, TOL_FP32);
        twin_check("adamw m", cas, &m, TOL_FP32);
        twin_check("adamw v", cas, &v, TOL_FP32);
        cfg.weight_decay = 0.0f;
        CHECK_OK(vp_adamw(g_cpu, &cfg, &p.h, &g.h, &m.h, &v.h, &step.h, NULL));
        CHECK_OK(vp_adamw(g_gpu, &cfg, &p.d, &g.d, &m.d, &v.d, &step.d, NULL));
        twin_check("adam (no scale) param", cas, &p, TOL_FP32);
        /* clip coefficient: one max_norm below the norm (coef < 1), one above (coef = 1) */
        for (int k = 0; k < 2; ++k) {
            const float max_norm = k == 0 ? 0.01f : 1e6f;
            twin_poison(&norm), twin_poison(&coef);
            CHECK_OK(vp_clip_coef(g_cpu, &g.h, max_norm, &norm.h, &coef.h));
            CHECK_OK(vp_clip_coef(g_gpu, &g.d, max_norm, &norm.d, &coef.d));
            twin_check("clip_coef norm", cas, &norm, TOL_FP32);
            twin_check(k == 0 ? "clip_coef coef (< 1)" : "clip_coef coef (= 1)", cas, &coef, TOL_FP32);
        }
        twin_free(&p), twin_free(&g), twin_free(&m), twin_free(&v);
        twin_free(&step), twin_free(&scale), twin_free(&norm), twin_free(&coef);
    }
}

int main(void) {
    gpu_setup("test_gpu_ops");
    RUN_TEST(test_fill_copy_convert);
    RUN_TEST(test_unary);
    RUN_TEST(test_binary_axpby_scale);
    RUN_TEST(test_softmax);
    RUN_TEST(test_norms);
    RUN_TEST(test_reductions);
    RUN_TEST(test_gather);
    RUN_TEST(test_optimiser);
    gpu_teardown();
    return vpt_finish();
}
