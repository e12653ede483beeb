/* Which device each job of the pool runs on (job_devices.h): the device list read, then the
 * slots dealt round robin over the devices with room. */
#include <stdlib.h>
#include <string.h>

#include "eval/job_devices.h"

vp_status vp_job_devices_parse(const char* list, int n_visible, int* out, int* n) {
    VP_REQUIRE(out != NULL && n != NULL, VP_ERR_INVALID_ARG, "vp_job_devices_parse: NULL argument");
    *n = 0;
    VP_REQUIRE(n_visible != 0, VP_ERR_UNSUPPORTED, "run.devices: no CUDA device is visible");
    // every visible device
    if (!list || !list[0] || strcmp(list, "all") == 0) {
        const int k = n_visible < 0 ? 0 : n_visible < VP_JOB_MAX_DEVICES ? n_visible : VP_JOB_MAX_DEVICES;
        for (int d = 0; d < k; ++d) out[d] = d;
        *n = k;
        return VP_OK;
    }
    // the items of the comma list, each checked (*n stays 0 on a refusal)
    int k = 0;
    const char* p = list;
    for (int item = 1;; ++item) {
        const char* end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        VP_REQUIRE(len > 0, VP_ERR_INVALID_ARG, "run.devices '%.200s': item %d is empty", list, item);
        VP_REQUIRE(len < 12 && strspn(p, "0123456789") >= len, VP_ERR_INVALID_ARG,
                   "run.devices '%.200s': item %d ('%.*s') is not a device index (a whole number >= 0)", list, item,
                   (int)(len < 40 ? len : 40), p);
        const long d = strtol(p, NULL, 10);
        VP_REQUIRE(n_visible < 0 || d < n_visible, VP_ERR_INVALID_ARG,
                   "run.devices '%.200s': device %ld is out of range: %d CUDA device%s visible (0 .. %d)", list, d,
                   n_visible, n_visible == 1 ? " is" : "s are", n_visible - 1);
        for (int i = 0; i < k; ++i)
            VP_REQUIRE(out[i] != (int)d, VP_ERR_INVALID_ARG, "run.devices '%.200s': device %ld is given twice", list, d);
        VP_REQUIRE(k < VP_JOB_MAX_DEVICES, VP_ERR_INVALID_ARG, "run.devices '%.200s': more than %d devices", list,
                   VP_JOB_MAX_DEVICES);
        out[k++] = (int)d;
        if (!end) break;
        p = end + 1;
    }
    *n = k;
    return VP_OK;
}

size_t vp_job_devices_job_bytes(size_t measured) { return measured + measured / 4 + VP_JOB_EXTRA_BYTES; }

int64_t vp_job_devices_room(size_t free_bytes, size_t job_bytes) {
    if (job_bytes == 0) return 0;
    const double fits = (double)free_bytes * 0.9 / (double)job_bytes;
    return fits < 1.0 ? 0 : (int64_t)fits;
}

vp_status vp_job_devices_assign(int64_t slots, int n_dev, const size_t* free_bytes, size_t job_bytes, int* dev_of,
                                int64_t* placed) {
    VP_REQUIRE(dev_of != NULL && placed != NULL, VP_ERR_INVALID_ARG, "vp_job_devices_assign: NULL argument");
    *placed = 0;
    VP_REQUIRE(slots >= 1, VP_ERR_INVALID_ARG, "vp_job_devices_assign: %lld jobs at once (>= 1)", (long long)slots);
    VP_REQUIRE(n_dev >= 1 && n_dev <= VP_JOB_MAX_DEVICES, VP_ERR_INVALID_ARG,
               "vp_job_devices_assign: %d devices (1 .. %d)", n_dev, VP_JOB_MAX_DEVICES);
    VP_REQUIRE(!free_bytes || job_bytes > 0, VP_ERR_INVALID_ARG, "vp_job_devices_assign: a job of 0 bytes");
    int64_t room[VP_JOB_MAX_DEVICES], used[VP_JOB_MAX_DEVICES] = {0};
    for (int d = 0; d < n_dev; ++d) room[d] = free_bytes ? vp_job_devices_room(free_bytes[d], job_bytes) : INT64_MAX;
    int next = 0; // the device after the last one given a slot
    for (int64_t i = 0; i < slots; ++i) {
        // the first device from `next` on whose room is not used up
        int d = -1;
        for (int t = 0; t < n_dev && d < 0; ++t) {
            const int c = (next + t) % n_dev;
            if (used[c] < room[c]) d = c;
        }
        if (d < 0 && i == 0) d = 0; // one job runs even where none fits
        if (d < 0) break;
        used[d]++;
        dev_of[i] = d;
        next = (d + 1) % n_dev;
        *placed = i + 1;
    }
    return VP_OK;
}
