/* Bad calls to the ops on the CPU backend: wrong shapes, NULL tensors and data, wrong
 * dtypes, device memory, bad enums and bad hyper-parameters each return the right status
 * with a message naming the op and the argument, and leave outputs untouched. */
#include "vp_test.h"

static vp_backend* g_b;

/* Host buffers the calls point into. */
static float g_x[64], g_y[64], g_z[64], g_w[64];
static int32_t g_i[64];

static vp_tensor f2(float* p, int64_t r, int64_t c) { return vp_tensor_2d(p, VP_F32, VP_MEM_HOST, r, c); }
static vp_tensor f1(float* p, int64_t n) { return vp_tensor_1d(p, VP_F32, VP_MEM_HOST, n); }

static void test_gemm_bad(void) {
    vp_tensor A = f2(g_x, 4, 3), B = f2(g_y, 3, 5), C = f2(g_z, 4, 5), bias = f1(g_w, 5);
    vp_gemm_desc d = vp_gemm_plain(0, 0, 4, 5, 3);
    for (int i = 0; i < 20; ++i) g_z[i] = 7.0f;
    CHECK_OK(vp_gemm(g_b, &d, &A, &B, NULL, &C));
    for (int i = 0; i < 20; ++i) g_z[i] = 7.0f;
    /* NULLs */
    CHECK_STATUS(vp_gemm(NULL, &d, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: backend is NULL");
    CHECK_STATUS(vp_gemm(g_b, NULL, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: descriptor");
    CHECK_STATUS(vp_gemm(g_b, &d, NULL, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: A is NULL");
    vp_tensor nodata = A;
    nodata.data = NULL;
    CHECK_STATUS(vp_gemm(g_b, &d, &A, &B, NULL, &nodata), VP_ERR_INVALID_ARG, "vp_gemm: C has no data");
    /* dtypes: i32 operand; f32 operands under BF16 precision */
    vp_tensor Ai = vp_tensor_2d(g_i, VP_I32, VP_MEM_HOST, 4, 3);
    CHECK_STATUS(vp_gemm(g_b, &d, &Ai, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: A is i32");
    vp_gemm_desc db = d;
    db.precision = VP_PREC_BF16;
    CHECK_STATUS(vp_gemm(g_b, &db, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: A is f32, expected bf16");
    /* shapes */
    vp_tensor Bsmall = f2(g_y, 2, 5);
    CHECK_STATUS(vp_gemm(g_b, &d, &A, &Bsmall, NULL, &C), VP_ERR_SHAPE, "vp_gemm: B");
    vp_tensor Csmall = f2(g_z, 4, 4);
    CHECK_STATUS(vp_gemm(g_b, &d, &A, &B, NULL, &Csmall), VP_ERR_SHAPE, "vp_gemm: C");
    vp_gemm_desc dz = d;
    dz.k = 0;
    CHECK_STATUS(vp_gemm(g_b, &dz, &A, &B, NULL, &C), VP_ERR_SHAPE, "vp_gemm: m=4 n=5 k=0");
    vp_gemm_desc ds = d;
    ds.batch = 2;
    ds.stride_c = 3;
    CHECK_STATUS(vp_gemm(g_b, &ds, &A, &B, NULL, &C), VP_ERR_SHAPE, "vp_gemm: stride_c 3");
    ds.stride_c = -20;
    CHECK_STATUS(vp_gemm(g_b, &ds, &A, &B, NULL, &C), VP_ERR_SHAPE, "vp_gemm: negative stride");
    /* enums, and the bias the epilogue needs */
    vp_gemm_desc de = d;
    de.epilogue = VP_EPI_COUNT;
    CHECK_STATUS(vp_gemm(g_b, &de, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: bad epilogue");
    de.epilogue = (vp_epilogue)-1;
    CHECK_STATUS(vp_gemm(g_b, &de, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: bad epilogue");
    vp_gemm_desc dp = d;
    dp.precision = (vp_precision)17;
    CHECK_STATUS(vp_gemm(g_b, &dp, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: bad precision");
    de.epilogue = VP_EPI_BIAS;
    CHECK_STATUS(vp_gemm(g_b, &de, &A, &B, NULL, &C), VP_ERR_INVALID_ARG, "vp_gemm: bias is NULL");
    vp_tensor bias4 = f1(g_w, 4);
    CHECK_STATUS(vp_gemm(g_b, &de, &A, &B, &bias4, &C), VP_ERR_SHAPE, "vp_gemm: bias");
    /* a bias per batch: (batch - 1) x stride_bias + n elements, the stride not negative */
    vp_tensor C2 = f2(g_z, 8, 5);
    vp_gemm_desc dbias = d;
    dbias.epilogue = VP_EPI_BIAS;
    dbias.batch = 2;
    dbias.stride_a = 0;
    dbias.stride_b = 0;
    dbias.stride_c = 20;
    dbias.stride_bias = 3;
    CHECK_STATUS(vp_gemm(g_b, &dbias, &A, &B, &bias, &C2), VP_ERR_SHAPE, "vp_gemm: bias");
    dbias.stride_bias = -1;
    CHECK_STATUS(vp_gemm(g_b, &dbias, &A, &B, &bias, &C2), VP_ERR_SHAPE, "vp_gemm: negative stride");
    /* memory the CPU cannot read */
    vp_tensor Cdev = C;
    Cdev.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_gemm(g_b, &d, &A, &B, NULL, &Cdev), VP_ERR_DEVICE, "vp_gemm: C lives in device memory");
    /* nothing was written by any rejected call */
    int touched = 0;
    for (int i = 0; i < 20; ++i) touched += g_z[i] != 7.0f;
    CHECK(touched == 0, "%d elements of C written by rejected calls", touched);
}

static void test_elementwise_bad(void) {
    vp_tensor x = f2(g_x, 3, 7), y = f2(g_y, 3, 7), y20 = f2(g_y, 4, 5), r7 = f1(g_w, 7), r6 = f1(g_w, 6);
    vp_tensor xi = vp_tensor_2d(g_i, VP_I32, VP_MEM_HOST, 3, 7);
    CHECK_STATUS(vp_unary(g_b, VP_UNARY_COUNT, &x, &y), VP_ERR_INVALID_ARG, "vp_unary: bad op");
    CHECK_STATUS(vp_unary(g_b, (vp_unary_op)-3, &x, &y), VP_ERR_INVALID_ARG, "vp_unary: bad op");
    CHECK_STATUS(vp_unary(g_b, VP_UNARY_RELU, &x, &y20), VP_ERR_SHAPE, "vp_unary: x");
    CHECK_STATUS(vp_unary(g_b, VP_UNARY_RELU, &x, NULL), VP_ERR_INVALID_ARG, "vp_unary: y is NULL");
    CHECK_STATUS(vp_unary_backward(g_b, VP_UNARY_TANH, &x, &xi, &y), VP_ERR_INVALID_ARG,
                 "vp_unary_backward: dy is i32");
    CHECK_STATUS(vp_binary(g_b, VP_BINARY_COUNT, &x, &r7, &y), VP_ERR_INVALID_ARG, "vp_binary: bad op");
    CHECK_OK(vp_binary(g_b, VP_BINARY_ADD, &x, &r7, &y));
    CHECK_STATUS(vp_binary(g_b, VP_BINARY_ADD, &x, &r6, &y), VP_ERR_SHAPE, "vp_binary: b");
    CHECK_STATUS(vp_axpby(g_b, 1.0f, &x, 0.0f, &y20), VP_ERR_SHAPE, "vp_axpby: x");
    vp_tensor s2 = f1(g_w, 2);
    CHECK_STATUS(vp_scale_by(g_b, &x, &s2), VP_ERR_SHAPE, "vp_scale_by: s");
    CHECK_STATUS(vp_fill(g_b, &xi, 1.0f), VP_ERR_INVALID_ARG, "vp_fill: x is i32");
    CHECK_STATUS(vp_fill_i32(g_b, &x, 1), VP_ERR_INVALID_ARG, "vp_fill_i32: x is f32");
    CHECK_STATUS(vp_copy(g_b, &x, &xi), VP_ERR_INVALID_ARG, "vp_copy: dst is i32");
    CHECK_STATUS(vp_copy(g_b, &x, &y20), VP_ERR_SHAPE, "vp_copy: src");
    CHECK_STATUS(vp_convert(g_b, &x, &y), VP_ERR_INVALID_ARG, "vp_convert: f32 -> f32");
    /* malformed tensors: no dims, too many dims, an empty extent */
    vp_tensor bad = x;
    bad.ndim = 0;
    CHECK_STATUS(vp_fill(g_b, &bad, 0.0f), VP_ERR_SHAPE, "vp_fill: x has ndim 0");
    bad.ndim = VP_MAX_DIMS + 1;
    CHECK_STATUS(vp_fill(g_b, &bad, 0.0f), VP_ERR_SHAPE, "vp_fill: x has ndim");
    bad = x;
    bad.shape[1] = 0;
    CHECK_STATUS(vp_fill(g_b, &bad, 0.0f), VP_ERR_SHAPE, "vp_fill: x extent 1");
    bad = x;
    bad.dtype = VP_DTYPE_COUNT;
    CHECK_STATUS(vp_fill(g_b, &bad, 0.0f), VP_ERR_INVALID_ARG, "vp_fill: x is ?");
    bad = x;
    bad.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_unary(g_b, VP_UNARY_EXP, &bad, &y), VP_ERR_DEVICE, "vp_unary: x lives in device memory");
    /* mapped memory is readable by the CPU */
    bad.mem = VP_MEM_MAPPED;
    CHECK_OK(vp_unary(g_b, VP_UNARY_EXP, &bad, &y));
}

static void test_rows_bad(void) {
    vp_tensor x = f2(g_x, 3, 7), y = f2(g_y, 3, 7), y4 = f2(g_y, 4, 7);
    vp_tensor g7 = f1(g_w, 7), g6 = f1(g_w, 6), b7 = f1(g_w + 8, 7), m3 = f1(g_z, 3), r3 = f1(g_z + 4, 3);
    vp_tensor m4 = f1(g_z, 4);
    CHECK_STATUS(vp_softmax(g_b, &x, &y4), VP_ERR_SHAPE, "vp_softmax: x");
    CHECK_STATUS(vp_log_softmax_backward(g_b, &x, NULL, &y), VP_ERR_INVALID_ARG, "vp_log_softmax_backward: dy is NULL");
    CHECK_OK(vp_layernorm(g_b, &x, &g7, &b7, 1e-5f, &y, &m3, &r3));
    CHECK_STATUS(vp_layernorm(g_b, &x, &g7, &b7, 0.0f, &y, &m3, &r3), VP_ERR_INVALID_ARG, "vp_layernorm: eps");
    CHECK_STATUS(vp_layernorm(g_b, &x, &g7, &b7, NAN, &y, &m3, &r3), VP_ERR_INVALID_ARG, "vp_layernorm: eps");
    CHECK_STATUS(vp_layernorm(g_b, &x, &g6, &b7, 1e-5f, &y, &m3, &r3), VP_ERR_SHAPE, "vp_layernorm: gamma");
    CHECK_STATUS(vp_layernorm(g_b, &x, &g7, &b7, 1e-5f, &y, &m4, &r3), VP_ERR_SHAPE, "vp_layernorm: mean");
    CHECK_STATUS(vp_layernorm(g_b, &x, &g7, NULL, 1e-5f, &y, &m3, &r3), VP_ERR_INVALID_ARG,
                 "vp_layernorm: beta is NULL");
    CHECK_STATUS(vp_layernorm_backward(g_b, &y, &x, &g7, &m3, &r3, &y, &g7, &g6), VP_ERR_SHAPE,
                 "vp_layernorm_backward: dbeta");
    CHECK_STATUS(vp_rmsnorm(g_b, &x, &g7, -1e-5f, &y, &r3), VP_ERR_INVALID_ARG, "vp_rmsnorm: eps");
    CHECK_STATUS(vp_rmsnorm(g_b, &x, &g7, INFINITY, &y, &r3), VP_ERR_INVALID_ARG, "vp_rmsnorm: eps");
    CHECK_STATUS(vp_rmsnorm_backward(g_b, &y4, &x, &g7, &r3, &y, &g7), VP_ERR_SHAPE, "vp_rmsnorm_backward: x");
    /* reductions */
    CHECK_STATUS(vp_reduce_rows(g_b, VP_REDUCE_COUNT, &x, &m3), VP_ERR_INVALID_ARG, "vp_reduce_rows: bad reduce op");
    CHECK_STATUS(vp_reduce_rows(g_b, VP_REDUCE_SUM, &x, &m4), VP_ERR_SHAPE, "vp_reduce_rows: out");
    CHECK_STATUS(vp_reduce_cols(g_b, VP_REDUCE_SUM, &x, &m3), VP_ERR_SHAPE, "vp_reduce_cols: out");
    CHECK_STATUS(vp_reduce_all(g_b, VP_REDUCE_MAX, &x, &m3), VP_ERR_SHAPE, "vp_reduce_all: out");
    CHECK_STATUS(vp_reduce_all(g_b, VP_REDUCE_MAX, NULL, &m3), VP_ERR_INVALID_ARG, "vp_reduce_all: x is NULL");
    /* gather */
    vp_tensor idx = vp_tensor_1d(g_i, VP_I32, VP_MEM_HOST, 2), idxf = f1(g_w, 2), out = f2(g_y, 2, 7);
    vp_tensor out3 = f2(g_y, 3, 7);
    CHECK_STATUS(vp_gather_rows(g_b, &x, &idxf, &out), VP_ERR_INVALID_ARG, "vp_gather_rows: idx is f32");
    CHECK_STATUS(vp_gather_rows(g_b, &x, &idx, &out3), VP_ERR_SHAPE, "vp_gather_rows: out");
}

static void test_optim_bad(void) {
    vp_tensor p = f1(g_x, 10), g = f1(g_y, 10), m = f1(g_z, 10), v = f1(g_w, 10), v9 = f1(g_w, 9);
    vp_tensor step = vp_tensor_1d(g_i, VP_I32, VP_MEM_HOST, 1), stepf = f1(g_w + 20, 1), s2 = f1(g_w + 20, 2);
    g_i[0] = 1;
    vp_adamw_cfg ok = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    CHECK_OK(vp_adamw(g_b, &ok, &p, &g, &m, &v, &step, NULL));
    vp_adamw_cfg c = ok;
    c.lr = -1.0f;
    CHECK_STATUS(vp_adamw(g_b, &c, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: lr");
    c.lr = NAN;
    CHECK_STATUS(vp_adamw(g_b, &c, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: lr");
    c = ok;
    c.eps = 0.0f;
    CHECK_STATUS(vp_adamw(g_b, &c, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: eps");
    c = ok;
    c.beta2 = 1.0f;
    CHECK_STATUS(vp_adamw(g_b, &c, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: betas");
    c = ok;
    c.weight_decay = -0.1f;
    CHECK_STATUS(vp_adamw(g_b, &c, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: weight_decay");
    CHECK_STATUS(vp_adamw(g_b, NULL, &p, &g, &m, &v, &step, NULL), VP_ERR_INVALID_ARG, "vp_adamw: cfg is NULL");
    CHECK_STATUS(vp_adamw(g_b, &ok, &p, &g, &m, &v9, &step, NULL), VP_ERR_SHAPE, "vp_adamw: param");
    CHECK_STATUS(vp_adamw(g_b, &ok, &p, &g, &m, &v, &stepf, NULL), VP_ERR_INVALID_ARG, "vp_adamw: step is f32");
    CHECK_STATUS(vp_adamw(g_b, &ok, &p, &g, &m, &v, &step, &s2), VP_ERR_SHAPE, "vp_adamw: grad_scale");
    CHECK_STATUS(vp_step_increment(g_b, &stepf), VP_ERR_INVALID_ARG, "vp_step_increment: counter is f32");
    vp_tensor nrm = f1(g_w + 30, 1), coef = f1(g_w + 31, 1);
    CHECK_STATUS(vp_clip_coef(g_b, &g, 0.0f, &nrm, &coef), VP_ERR_INVALID_ARG, "vp_clip_coef: max_norm");
    CHECK_STATUS(vp_clip_coef(g_b, &g, 1.0f, &nrm, &s2), VP_ERR_SHAPE, "vp_clip_coef: coef");
}

/* Memory and transfer calls that cannot be served by the CPU. */
static void test_memory_bad(void) {
    vp_buffer buf;
    CHECK_STATUS(vp_buffer_alloc(g_b, VP_MEM_DEVICE, 64, &buf), VP_ERR_DEVICE, "cannot make device memory");
    CHECK_STATUS(vp_buffer_alloc(g_b, VP_MEM_COUNT, 64, &buf), VP_ERR_INVALID_ARG, "vp_buffer_alloc: bad memory kind");
    vp_tensor dev = f1(g_x, 4);
    dev.mem = VP_MEM_DEVICE;
    float host[8] = {0};
    CHECK_STATUS(vp_upload(g_b, &dev, host, 16), VP_ERR_DEVICE, "vp_upload: tensor lives in device memory");
    vp_tensor small = f1(g_x, 4);
    CHECK_STATUS(vp_download(g_b, host, &small, 32), VP_ERR_SHAPE, "vp_download: 32 bytes");
    CHECK_STATUS(vp_upload(g_b, &small, NULL, 16), VP_ERR_INVALID_ARG, "vp_upload: host pointer is NULL");
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_gemm_bad);
    RUN_TEST(test_elementwise_bad);
    RUN_TEST(test_rows_bad);
    RUN_TEST(test_optim_bad);
    RUN_TEST(test_memory_bad);
    vp_backend_free(g_b);
    return vpt_finish();
}
