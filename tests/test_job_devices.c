/* The device of each job of the job pool (eval/job_devices.h): the device list (every visible
 * device, a given list in its order, each refusal by its message) and the round-robin placement
 * of the jobs at once over the devices' rooms (unlimited, uneven, full devices skipped, every
 * device full, one job where none fits), each against the placement worked out by hand. */
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

/* Placing `slots` on n_dev devices with room[] (NULL: none) gives want[placed]. */
static void check_assign(int64_t slots, int n_dev, const int64_t* room, const int* want, int64_t placed) {
    int got[64];
    int64_t k = -1;
    for (int i = 0; i < 64; ++i) got[i] = -1;
    CHECK_OK(vp_job_devices_assign(slots, n_dev, room, got, &k));
    CHECK(k == placed, "assign(%lld slots, %d devices): %lld placed, expected %lld", (long long)slots, n_dev,
          (long long)k, (long long)placed);
    for (int64_t i = 0; i < placed && i < k; ++i)
        CHECK(got[i] == want[i], "assign(%lld slots, %d devices): slot %lld on device %d, expected %d",
              (long long)slots, n_dev, (long long)i, got[i], want[i]);
}

static void test_assign(void) {
    // no limit: round robin by slot
    const int rr[] = {0, 1, 2, 0, 1, 2, 0};
    check_assign(7, 3, NULL, rr, 7);
    const int single[] = {0, 0, 0};
    check_assign(3, 1, NULL, single, 3);
    // uneven rooms: device 1 holds one job, then the others share the rest in turn
    const int64_t room_a[] = {3, 1, 2};
    const int a[] = {0, 1, 2, 0, 2, 0};
    check_assign(6, 3, room_a, a, 6);
    // more asked than fit: every device full after 1 + 2 jobs
    const int64_t room_b[] = {1, 2};
    const int b[] = {0, 1, 1};
    check_assign(5, 2, room_b, b, 3);
    // a device with no room is skipped from the start
    const int64_t room_c[] = {0, 2, 1};
    const int c[] = {1, 2, 1};
    check_assign(4, 3, room_c, c, 3);
    // nothing fits anywhere: one job on the first device
    const int64_t room_d[] = {0, 0};
    const int d[] = {0};
    check_assign(4, 2, room_d, d, 1);
    // fewer asked than fit: the first devices in turn
    const int64_t room_e[] = {4, 4, 4, 4};
    const int e[] = {0, 1};
    check_assign(2, 4, room_e, e, 2);
}

static void test_assign_refusals(void) {
    int d[4];
    int64_t k = 0;
    const int64_t neg[] = {1, -1};
    CHECK_STATUS(vp_job_devices_assign(0, 2, NULL, d, &k), VP_ERR_INVALID_ARG, "0 jobs at once");
    CHECK_STATUS(vp_job_devices_assign(2, 0, NULL, d, &k), VP_ERR_INVALID_ARG, "0 devices");
    CHECK_STATUS(vp_job_devices_assign(2, 2, neg, d, &k), VP_ERR_INVALID_ARG, "device 1 holds -1 jobs");
    CHECK(k == 0, "a refused placement leaves %lld placed", (long long)k);
}

int main(void) {
    RUN_TEST(test_parse);
    RUN_TEST(test_parse_refusals);
    RUN_TEST(test_assign);
    RUN_TEST(test_assign_refusals);
    return vpt_finish();
}
