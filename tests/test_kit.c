/* The kernel kit (backend/kit.h) on the CPU backend: each tensor check returns the right
 * status with a message naming the call and the argument, in the documented order; the
 * kernel-table macros fill a table by name; vp_kernels_select picks the CPU table and
 * fails cleanly; the CPU backend has no stream. */
#include "backend/kit.h"
#include "vp_test.h"

static vp_backend* g_b;
static float g_x[64];
static int32_t g_i[64];

static vp_tensor f2(int64_t r, int64_t c) { return vp_tensor_2d(g_x, VP_F32, VP_MEM_HOST, r, c); }

static void test_check_basic(void) {
    vp_tensor x = f2(3, 4);
    CHECK_OK(vp_tensor_check("fn", "x", g_b, &x, VP_F32));
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, NULL, VP_F32), VP_ERR_INVALID_ARG, "fn: x is NULL");
    vp_tensor bad = x;
    bad.data = NULL;
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &bad, VP_F32), VP_ERR_INVALID_ARG, "fn: x has no data");
    bad = x;
    bad.ndim = 0;
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &bad, VP_F32), VP_ERR_SHAPE, "fn: x has ndim 0");
    bad = x;
    bad.shape[0] = 0;
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &bad, VP_F32), VP_ERR_SHAPE, "fn: x extent 0 is 0");
    vp_tensor xi = vp_tensor_2d(g_i, VP_I32, VP_MEM_HOST, 3, 4);
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &xi, VP_F32), VP_ERR_INVALID_ARG, "fn: x is i32, expected f32");
    bad = x;
    bad.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &bad, VP_F32), VP_ERR_DEVICE, "fn: x lives in device memory");
    /* the dtype is checked before the memory */
    xi.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_tensor_check("fn", "x", g_b, &xi, VP_F32), VP_ERR_INVALID_ARG, "is i32");
    /* mapped memory is readable by the CPU */
    bad.mem = VP_MEM_MAPPED;
    CHECK_OK(vp_tensor_check("fn", "x", g_b, &bad, VP_F32));
}

static void test_check_sizes(void) {
    vp_tensor x = f2(3, 4), v = vp_tensor_1d(g_x, VP_F32, VP_MEM_HOST, 12);
    CHECK_OK(vp_tensor_check_numel("fn", "x", g_b, &x, VP_F32, 12));
    CHECK_STATUS(vp_tensor_check_numel("fn", "x", g_b, &x, VP_F32, 11), VP_ERR_SHAPE,
                 "fn: x is f32[3, 4]@host, expected 11 elements");
    /* [rows, cols]: the last extent counts unless cols is 1 */
    CHECK_OK(vp_tensor_check_rows("fn", "x", g_b, &x, VP_F32, 3, 4));
    CHECK_OK(vp_tensor_check_rows("fn", "v", g_b, &v, VP_F32, 12, 1));
    CHECK_STATUS(vp_tensor_check_rows("fn", "v", g_b, &v, VP_F32, 3, 4), VP_ERR_SHAPE, "expected [3, 4]");
    CHECK_STATUS(vp_tensor_check_rows("fn", "x", g_b, &x, VP_F32, 13, 1), VP_ERR_SHAPE, "expected [13]");
    /* at least min_rows rows of cols, or min_rows elements when cols <= 0 */
    CHECK_OK(vp_tensor_check_min_rows("fn", "x", g_b, &x, VP_F32, 2, 4));
    CHECK_OK(vp_tensor_check_min_rows("fn", "x", g_b, &x, VP_F32, 12, 0));
    CHECK_STATUS(vp_tensor_check_min_rows("fn", "x", g_b, &x, VP_F32, 4, 4), VP_ERR_SHAPE, "fewer than 4 rows");
    CHECK_STATUS(vp_tensor_check_min_rows("fn", "x", g_b, &x, VP_F32, 1, 3), VP_ERR_SHAPE, "expected 3 columns");
    CHECK_STATUS(vp_tensor_check_min_rows("fn", "x", g_b, &x, VP_F32, 13, 0), VP_ERR_SHAPE, "fewer than 13 elements");
    vp_tensor y = f2(2, 6), z = f2(2, 5);
    CHECK_OK(vp_tensor_check_same_numel("fn", "x", &x, "y", &y));
    CHECK_STATUS(vp_tensor_check_same_numel("fn", "x", &x, "z", &z), VP_ERR_SHAPE,
                 "fn: x f32[3, 4]@host and z f32[2, 5]@host differ in size");
    /* the size comes last: a wrong dtype of the wrong size is a dtype error */
    vp_tensor xi = vp_tensor_1d(g_i, VP_I32, VP_MEM_HOST, 5);
    CHECK_STATUS(vp_tensor_check_numel("fn", "xi", g_b, &xi, VP_F32, 12), VP_ERR_INVALID_ARG, "xi is i32");
}

/* A two-kernel family in the kit's list form. */
typedef int kt_add_fn(int a, int b);
typedef int kt_neg_fn(int a);
#define KT_KERNELS(X, f, i) X(f, i, add) X(f, i, neg)
typedef struct kt_kernels {
    VP_KERNEL_FIELDS(KT_KERNELS, kt)
} kt_kernels;
VP_KERNEL_DECLARE(KT_KERNELS, kt, kt_one)
int kt_one_add(int a, int b) { return a + b; }
int kt_one_neg(int a) { return -a; }
static const kt_kernels KT_ONE = VP_KERNEL_TABLE(KT_KERNELS, kt, kt_one);

static void test_tables(void) {
    CHECK(KT_ONE.add == kt_one_add && KT_ONE.neg == kt_one_neg, "entries not filled by name");
    CHECK(KT_ONE.add(2, 3) == 5 && KT_ONE.neg(4) == -4, "table calls");
    const void* t = NULL;
    const int cuda_table = 1;
    CHECK_OK(vp_kernels_select("fn", "test kernels", g_b, &KT_ONE, &cuda_table, &t));
    CHECK(t == &KT_ONE, "the CPU backend got another table");
    CHECK_STATUS(vp_kernels_select("fn", "test kernels", NULL, &KT_ONE, NULL, &t), VP_ERR_INVALID_ARG,
                 "fn: backend is NULL");
    CHECK(t == NULL, "a failed choice leaves a table");
    CHECK(vp_backend_stream(g_b) == NULL && vp_backend_stream(NULL) == NULL, "the CPU backend has a stream");
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_check_basic);
    RUN_TEST(test_check_sizes);
    RUN_TEST(test_tables);
    vp_backend_free(g_b);
    return vpt_finish();
}
