/* The device of each job of the job pool (eval/job_devices.h): the device list (every visible
 * device, a given list in its order, the form alone, each refusal by its message), the memory
 * rule (one job's bytes, a device's room), and the round-robin placement of the jobs at once
 * over the devices' free memory (unlimited, uneven, full devices skipped, every device full, one
 * job where none fits), each against the placement worked out by hand. */
#include "eval/job_devices.h"
#include "vp_test.h"

/* Parsing `list` with n_visible devices gives want[n]. */
static void check_parse(const char* list, int n_visible, const int* want, int n) {
    int got[VP_JOB_MAX_DEVICES], k = -1;
    CHECK_OK(vp_job_devices_parse(list, n_visible, got, &k));
    CHECK(k == n, "parse('%s', %d): %d devices, expected %d", list ? list : "(null)", n_visible, k, n);
    for (int i = 0; i < n && i < k; ++i)
        CHECK(got[i] == want[i], "parse('%s', %d)[%d] = %d, expected %d", list ? list : "(null)", n_visible, i,
              got[i], want[i]);
}

static void test_parse(void) {
    const int all4[] = {0, 1, 2, 3};
    check_parse("", 4, all4, 4);
    check_parse(NULL, 4, all4, 4);
    check_parse("all", 4, all4, 4);
    const int one[] = {0};
    check_parse("", 1, one, 1);
    const int some[] = {2, 0, 3};
    check_parse("2,0,3", 4, some, 3);
    const int last[] = {7};
    check_parse("7", 8, last, 1);
    // the form only (n_visible < 0): any index, every visible device gives none
    const int far[] = {70, 3};
    check_parse("70,3", -1, far, 2);
    check_parse("", -1, NULL, 0);
    check_parse("all", -1, NULL, 0);
}

static void test_parse_refusals(void) {
    int d[VP_JOB_MAX_DEVICES], n = 0;
    CHECK_STATUS(vp_job_devices_parse("", 0, d, &n), VP_ERR_UNSUPPORTED, "no CUDA device is visible");
    CHECK_STATUS(vp_job_devices_parse("0,2", 2, d, &n), VP_ERR_INVALID_ARG,
                 "device 2 is out of range: 2 CUDA devices are visible (0 .. 1)");
    CHECK_STATUS(vp_job_devices_parse("1", 1, d, &n), VP_ERR_INVALID_ARG,
                 "device 1 is out of range: 1 CUDA device is visible (0 .. 0)");
    CHECK_STATUS(vp_job_devices_parse("1,1", 4, d, &n), VP_ERR_INVALID_ARG, "device 1 is given twice");
    CHECK_STATUS(vp_job_devices_parse("0,,1", 4, d, &n), VP_ERR_INVALID_ARG, "item 2 is empty");
    CHECK_STATUS(vp_job_devices_parse("0,", 4, d, &n), VP_ERR_INVALID_ARG, "item 2 is empty");
    CHECK_STATUS(vp_job_devices_parse("-1", 4, d, &n), VP_ERR_INVALID_ARG, "item 1 ('-1') is not a device index");
    CHECK_STATUS(vp_job_devices_parse("0,gpu1", 4, d, &n), VP_ERR_INVALID_ARG,
                 "item 2 ('gpu1') is not a device index");
    CHECK_STATUS(vp_job_devices_parse("1 ", 4, d, &n), VP_ERR_INVALID_ARG, "item 1 ('1 ') is not a device index");
    CHECK_STATUS(vp_job_devices_parse("99999999999999", 4, d, &n), VP_ERR_INVALID_ARG, "is not a device index");
    CHECK_STATUS(vp_job_devices_parse("2,x", -1, d, &n), VP_ERR_INVALID_ARG, "item 2 ('x') is not a device index");
    CHECK_STATUS(vp_job_devices_parse("5,5", -1, d, &n), VP_ERR_INVALID_ARG, "device 5 is given twice");
    char many[400] = "0";
    for (int i = 1; i <= VP_JOB_MAX_DEVICES; ++i) snprintf(many + strlen(many), sizeof many - strlen(many), ",%d", i);
    CHECK_STATUS(vp_job_devices_parse(many, -1, d, &n), VP_ERR_INVALID_ARG, "more than 64 devices");
    CHECK(n == 0, "a refused list leaves %d devices", n);
}

/* Placing `slots` on n_dev devices with free[] bytes (NULL: no limit) and jobs of `job` bytes
 * gives want[placed]. */
static void check_assign(int64_t slots, int n_dev, const size_t* free, size_t job, const int* want, int64_t placed) {
    int got[64];
    int64_t k = -1;
    for (int i = 0; i < 64; ++i) got[i] = -1;
    CHECK_OK(vp_job_devices_assign(slots, n_dev, free, job, got, &k));
    CHECK(k == placed, "assign(%lld slots, %d devices): %lld placed, expected %lld", (long long)slots, n_dev,
          (long long)k, (long long)placed);
    for (int64_t i = 0; i < placed && i < k; ++i)
        CHECK(got[i] == want[i], "assign(%lld slots, %d devices): slot %lld on device %d, expected %d",
              (long long)slots, n_dev, (long long)i, got[i], want[i]);
}

static void test_memory_rule(void) {
    const size_t mib = (size_t)1 << 20;
    // one job: its measured bytes x1.25 plus 256 MiB
    CHECK(vp_job_devices_job_bytes(0) == 256 * mib, "job_bytes(0) = %zu", vp_job_devices_job_bytes(0));
    CHECK(vp_job_devices_job_bytes(400 * mib) == 756 * mib, "job_bytes(400 MiB) = %zu MiB",
          vp_job_devices_job_bytes(400 * mib) / mib);
    // a device holds floor(0.9 free / job): 1000 x 0.9 / 100 = 9; 1111 -> 9.999 -> 9; 1112 -> 10.008 -> 10
    CHECK(vp_job_devices_room(1000, 100) == 9, "room(1000, 100) = %lld", (long long)vp_job_devices_room(1000, 100));
    CHECK(vp_job_devices_room(1111, 100) == 9, "room(1111, 100) = %lld", (long long)vp_job_devices_room(1111, 100));
    CHECK(vp_job_devices_room(1112, 100) == 10, "room(1112, 100) = %lld", (long long)vp_job_devices_room(1112, 100));
    CHECK(vp_job_devices_room(111, 100) == 0 && vp_job_devices_room(0, 100) == 0 && vp_job_devices_room(5, 0) == 0,
          "nothing fits: %lld %lld %lld", (long long)vp_job_devices_room(111, 100),
          (long long)vp_job_devices_room(0, 100), (long long)vp_job_devices_room(5, 0));
    // an H200's 139 GiB free over jobs of 1 GiB measured: 1.25 GiB + 256 MiB = 1536 MiB -> 83 jobs
    const size_t h200 = (size_t)139 << 30;
    CHECK(vp_job_devices_room(h200, vp_job_devices_job_bytes((size_t)1 << 30)) == 83, "H200 room %lld",
          (long long)vp_job_devices_room(h200, vp_job_devices_job_bytes((size_t)1 << 30)));
}

/* r jobs of 100 bytes fit r x 112 bytes (0.9 x 112 r = 100.8 r). */
#define FITS(r) ((size_t)(r) * 112)

static void test_assign(void) {
    // no limit: round robin by slot
    const int rr[] = {0, 1, 2, 0, 1, 2, 0};
    check_assign(7, 3, NULL, 0, rr, 7);
    const int single[] = {0, 0, 0};
    check_assign(3, 1, NULL, 0, single, 3);
    // uneven rooms (3, 1, 2): device 1 takes one job, then the others share the rest in turn
    const size_t free_a[] = {FITS(3), FITS(1), FITS(2)};
    const int a[] = {0, 1, 2, 0, 2, 0};
    check_assign(6, 3, free_a, 100, a, 6);
    // more asked than fit (1, 2): every device full after 3 jobs
    const size_t free_b[] = {FITS(1), FITS(2)};
    const int b[] = {0, 1, 1};
    check_assign(5, 2, free_b, 100, b, 3);
    // a device with no room (0, 2, 1) is skipped from the start
    const size_t free_c[] = {FITS(0) + 111, FITS(2), FITS(1)};
    const int c[] = {1, 2, 1};
    check_assign(4, 3, free_c, 100, c, 3);
    // nothing fits anywhere: one job on the first device
    const size_t free_d[] = {50, 0};
    const int d[] = {0};
    check_assign(4, 2, free_d, 100, d, 1);
    // fewer asked than fit: the first devices in turn
    const size_t free_e[] = {FITS(4), FITS(4), FITS(4), FITS(4)};
    const int e[] = {0, 1};
    check_assign(2, 4, free_e, 100, e, 2);
}

static void test_assign_refusals(void) {
    int d[4];
    int64_t k = 0;
    const size_t free[] = {1000, 1000};
    CHECK_STATUS(vp_job_devices_assign(0, 2, NULL, 0, d, &k), VP_ERR_INVALID_ARG, "0 jobs at once");
    CHECK_STATUS(vp_job_devices_assign(2, 0, NULL, 0, d, &k), VP_ERR_INVALID_ARG, "0 devices");
    CHECK_STATUS(vp_job_devices_assign(2, VP_JOB_MAX_DEVICES + 1, NULL, 0, d, &k), VP_ERR_INVALID_ARG, "65 devices");
    CHECK_STATUS(vp_job_devices_assign(2, 2, free, 0, d, &k), VP_ERR_INVALID_ARG, "a job of 0 bytes");
    CHECK(k == 0, "a refused placement leaves %lld placed", (long long)k);
}

int main(void) {
    RUN_TEST(test_parse);
    RUN_TEST(test_parse_refusals);
    RUN_TEST(test_memory_rule);
    RUN_TEST(test_assign);
    RUN_TEST(test_assign_refusals);
    return vpt_finish();
}
