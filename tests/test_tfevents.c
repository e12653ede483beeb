/* TensorBoard event files: CRC32C against its standard check values, the protocol buffer
 * bytes of a scalar, and a metrics log's event file decoded back record by record (every
 * length and data CRC checked) against the lines it mirrors, after an append too. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "io/tfevents.h"
#include "vp_test.h"

static char g_root[] = "/tmp/vp_test_tfevents_XXXXXX";

/* ---- a decoder of the fields written, independent of the encoder ----------------------------- */

#define MAX_VALUES 16

/* One decoded Event. */
typedef struct ev {
    double wall_time;
    int64_t step;
    char version[32];              /* file_version, "" when absent */
    int n;                         /* summary values */
    char tag[MAX_VALUES][64];      /* their tags */
    float value[MAX_VALUES];       /* their simple_values */
} ev;

static uint64_t le(const uint8_t* p, int k) {
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

/* A varint at p[*at] (below end); 0 and *at = end + 1 when it runs past end. */
static uint64_t varint(const uint8_t* p, size_t* at, size_t end) {
    uint64_t v = 0;
    for (int shift = 0; *at < end && shift < 64; shift += 7) {
        uint8_t b = p[(*at)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
    *at = end + 1;
    return 0;
}

/* Decodes a Summary.Value at p[0..n) into e's next slot; 0 when malformed. */
static int decode_value(const uint8_t* p, size_t n, ev* e) {
    if (e->n >= MAX_VALUES) return 0;
    size_t at = 0;
    e->tag[e->n][0] = '\0';
    int have_value = 0;
    while (at < n) {
        uint64_t key = varint(p, &at, n);
        if (key == ((1 << 3) | 2)) {
            uint64_t len = varint(p, &at, n);
            if (at + len > n || len >= sizeof e->tag[0]) return 0;
            memcpy(e->tag[e->n], p + at, len);
            e->tag[e->n][len] = '\0';
            at += len;
        } else if (key == ((2 << 3) | 5)) {
            if (at + 4 > n) return 0;
            uint32_t bits = (uint32_t)le(p + at, 4);
            memcpy(&e->value[e->n], &bits, 4);
            at += 4;
            have_value = 1;
        } else {
            return 0;
        }
    }
    e->n++;
    return have_value;
}

/* Decodes an Event at p[0..n); 0 when malformed or holding a field vulpes does not write. */
static int decode_event(const uint8_t* p, size_t n, ev* e) {
    memset(e, 0, sizeof *e);
    size_t at = 0;
    while (at < n) {
        uint64_t key = varint(p, &at, n);
        if (key == ((1 << 3) | 1) && at + 8 <= n) {
            uint64_t bits = le(p + at, 8);
            memcpy(&e->wall_time, &bits, 8);
            at += 8;
        } else if (key == ((2 << 3) | 0)) {
            e->step = (int64_t)varint(p, &at, n);
        } else if (key == ((3 << 3) | 2)) {
            uint64_t len = varint(p, &at, n);
            if (at + len > n || len >= sizeof e->version) return 0;
            memcpy(e->version, p + at, len);
            at += len;
        } else if (key == ((5 << 3) | 2)) {
            uint64_t len = varint(p, &at, n);
            size_t end = at + len;
            if (end > n) return 0;
            while (at < end) {
                if (varint(p, &at, end) != ((1 << 3) | 2)) return 0;
                uint64_t vlen = varint(p, &at, end);
                if (at + vlen > end || !decode_value(p + at, vlen, e)) return 0;
                at += vlen;
            }
        } else {
            return 0;
        }
    }
    return at == n;
}

/* Decodes the records of the file at path into evs[max]; returns their count, -1 when a
 * record's framing or either CRC is wrong, or an Event does not decode. */
static int read_events(const char* path, ev* evs, int max) {
    long size = 0;
    uint8_t* buf = (uint8_t*)vpt_slurp(path, &size);
    if (!buf) return -1;
    int n = 0;
    size_t at = 0;
    while (at < (size_t)size) {
        if (at + 12 > (size_t)size || n >= max) break;
        uint64_t len = le(buf + at, 8);
        uint32_t len_crc = (uint32_t)le(buf + at + 8, 4);
        if (len_crc != vp_crc32c_mask(vp_crc32c(buf + at, 8))) break;
        if (at + 12 + len + 4 > (size_t)size) break;
        const uint8_t* data = buf + at + 12;
        if ((uint32_t)le(data + len, 4) != vp_crc32c_mask(vp_crc32c(data, len))) break;
        if (!decode_event(data, len, &evs[n])) break;
        ++n;
        at += 12 + len + 4;
    }
    int ok = at == (size_t)size;
    free(buf);
    return ok ? n : -1;
}

/* The value of `tag` in e, NAN when absent. */
static double value_of(const ev* e, const char* tag) {
    for (int i = 0; i < e->n; ++i)
        if (strcmp(e->tag[i], tag) == 0) return e->value[i];
    return NAN;
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_crc32c(void) {
    // the standard check value and the iSCSI test vector of 32 zero bytes (RFC 3720, B.4)
    CHECK(vp_crc32c("123456789", 9) == 0xE3069283u, "crc32c(123456789) = %08x", vp_crc32c("123456789", 9));
    uint8_t zeros[32] = {0};
    CHECK(vp_crc32c(zeros, 32) == 0x8A9136AAu, "crc32c(32 zeros) = %08x", vp_crc32c(zeros, 32));
    CHECK(vp_crc32c("", 0) == 0u, "crc32c('') = %08x", vp_crc32c("", 0));
    // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8 = 0x2507C60D + 0xA282EAD8
    CHECK(vp_crc32c_mask(0xE3069283u) == 0xC78AB0E5u, "mask = %08x", vp_crc32c_mask(0xE3069283u));
}

static void test_scalar_bytes(void) {
    char path[256];
    vpt_path(path, sizeof path, g_root, "bytes.tfevents");
    FILE* f = fopen(path, "wb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    vp_tb_scalar v = {"a/b", 1.5f};
    CHECK_OK(vp_tfevents_write_scalars(f, path, 0.0, 300, &v, 1));
    fclose(f);
    long size = 0;
    uint8_t* b = (uint8_t*)vpt_slurp(path, &size);
    // Event: 09 + 8 zero bytes (wall_time 0.0), 10 AC 02 (step 300), 2A 0C Summary {
    // 0A 0A Value { 0A 03 "a/b", 15 00 00 C0 3F (1.5f) } }: 9 + 3 + 2 + 12 = 26 bytes
    static const uint8_t want[26] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xAC, 0x02, 0x2A, 0x0C,
                                     0x0A, 0x0A, 0x0A, 0x03, 'a', '/', 'b', 0x15, 0x00, 0x00, 0xC0, 0x3F};
    CHECK(size == 8 + 4 + 26 + 4, "record of %ld bytes, expected 42", size);
    if (b && size == 42) {
        CHECK(le(b, 8) == 26, "length field %llu", (unsigned long long)le(b, 8));
        CHECK((uint32_t)le(b + 8, 4) == vp_crc32c_mask(vp_crc32c(b, 8)), "length CRC differs");
        CHECK(memcmp(b + 12, want, 26) == 0, "the Event's bytes differ from the hand encoding");
        CHECK((uint32_t)le(b + 38, 4) == vp_crc32c_mask(vp_crc32c(want, 26)), "data CRC differs");
    }
    free(b);
}

/* Writes an event with the fields of the test log. */
static void log_line(vp_metrics_log* m, const char* event, int64_t iteration, double loss) {
    CHECK_OK(vp_metrics_log_begin(m, event));
    if (iteration >= 0) CHECK_OK(vp_metrics_log_int(m, "iteration", iteration));
    CHECK_OK(vp_metrics_log_num(m, "loss", loss));
    CHECK_OK(vp_metrics_log_num(m, "q_mean", NAN));
    CHECK_OK(vp_metrics_log_str(m, "reason", "periodic"));
    CHECK_OK(vp_metrics_log_int(m, "env_steps", 4096));
    CHECK_OK(vp_metrics_log_end(m));
}

static void test_metrics_mirror(void) {
    char path[256], evp[256];
    vpt_path(path, sizeof path, g_root, "metrics.jsonl");
    vpt_path(evp, sizeof evp, g_root, "events.out.tfevents.metrics");
    char got[256];
    CHECK_OK(vp_tfevents_path(path, got, sizeof got));
    CHECK(strcmp(got, evp) == 0, "event file %s, expected %s", got, evp);
    CHECK_OK(vp_tfevents_path("metrics.jsonl", got, sizeof got));
    CHECK(strcmp(got, "events.out.tfevents.metrics") == 0, "event file %s", got);

    // two lines: a train line with an iteration, a line without one (its index is its step)
    vp_metrics_log m;
    CHECK_OK(vp_metrics_log_open(&m, path, 0));
    log_line(&m, "train", 7, 0.25);
    log_line(&m, "backtest", -1, 0.5);
    vp_metrics_log_close(&m);
    ev e[8];
    int n = read_events(evp, e, 8);
    CHECK(n == 3, "%d records, expected 3 (version and two lines)", n);
    if (n != 3) return;
    CHECK(strcmp(e[0].version, VP_TFEVENTS_VERSION) == 0 && e[0].n == 0, "first record '%s'", e[0].version);
    CHECK(e[0].wall_time > 1.6e9, "wall_time %f is not a time of now", e[0].wall_time);
    CHECK(e[1].step == 7 && e[1].n == 2, "step %lld, %d values", (long long)e[1].step, e[1].n);
    CHECK(value_of(&e[1], "train/loss") == 0.25 && value_of(&e[1], "train/env_steps") == 4096.0,
          "train/loss %g, train/env_steps %g", value_of(&e[1], "train/loss"), value_of(&e[1], "train/env_steps"));
    CHECK(isnan(value_of(&e[1], "train/q_mean")) && isnan(value_of(&e[1], "train/reason")) &&
              isnan(value_of(&e[1], "train/iteration")),
          "a null, a string or the step became a scalar");
    CHECK(e[2].step == 1 && value_of(&e[2], "backtest/loss") == 0.5, "step %lld, backtest/loss %g",
          (long long)e[2].step, value_of(&e[2], "backtest/loss"));

    // an append rewrites the mirror from the lines, then goes on
    CHECK_OK(vp_metrics_log_open(&m, path, 1));
    CHECK(m.line_index == 2, "line index %lld after reading 2 lines", (long long)m.line_index);
    log_line(&m, "train", 9, 0.125);
    vp_metrics_log_close(&m);
    n = read_events(evp, e, 8);
    CHECK(n == 4, "%d records after the append, expected 4", n);
    if (n != 4) return;
    CHECK(e[1].step == 7 && value_of(&e[1], "train/loss") == 0.25, "replayed line: step %lld", (long long)e[1].step);
    CHECK(e[2].step == 1 && value_of(&e[2], "backtest/loss") == 0.5, "replayed index step %lld", (long long)e[2].step);
    CHECK(e[3].step == 9 && value_of(&e[3], "train/loss") == 0.125, "appended: step %lld", (long long)e[3].step);

    // a last line cut short (no newline) is not a line yet: no Event for it
    FILE* f = fopen(path, "ab");
    CHECK(f != NULL, "cannot append to %s", path);
    if (f) {
        fputs("{\"event\":\"train\",\"iteration\":10,\"loss\":", f);
        fclose(f);
    }
    CHECK_OK(vp_metrics_log_open(&m, path, 1));
    CHECK(m.line_index == 3, "line index %lld with a torn last line", (long long)m.line_index);
    vp_metrics_log_close(&m);
    n = read_events(evp, e, 8);
    CHECK(n == 4, "%d records with a torn last line, expected 4", n);

    // a flipped data byte is caught by the data CRC
    long size = 0;
    char* b = vpt_slurp(evp, &size);
    if (b && size > 40) {
        b[30] ^= 0x01;
        f = fopen(evp, "wb");
        if (f) {
            fwrite(b, 1, (size_t)size, f);
            fclose(f);
        }
        CHECK(read_events(evp, e, 8) == -1, "a damaged record decoded");
    }
    free(b);
}

int main(void) {
    if (!mkdtemp(g_root)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    RUN_TEST(test_crc32c);
    RUN_TEST(test_scalar_bytes);
    RUN_TEST(test_metrics_mirror);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return vpt_finish();
}
