/* Tests of the safetensors reader and writer: round trips of every dtype with metadata,
 * a file laid out byte by byte as Python's package writes it, and rejection of broken
 * files with messages naming what is wrong. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "io/safetensors.h"
#include "vp_test.h"

static char g_path[256];

/* Writes raw bytes: the 8-byte length of `header`, the header, then `data`. */
static void write_raw(const char* header, uint64_t declared_len, const void* data, size_t n) {
    FILE* f = fopen(g_path, "wb");
    CHECK(f != NULL, "cannot create %s", g_path);
    if (!f) return;
    unsigned char len8[8];
    for (int i = 0; i < 8; ++i) len8[i] = (unsigned char)(declared_len >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

static void test_round_trip(void) {
    vp_st_writer w;
    vp_st_writer_init(&w);
    float a[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
    int32_t b[5] = {7, -1, 2147483647, 0, -2147483647 - 1};
    uint16_t h[3] = {0x3f80, 0xc000, 0x7fc0};
    float s = 42.0f;
    int64_t sa[2] = {2, 3}, sb[1] = {5}, sh[1] = {3}, se[2] = {0, 4};
    CHECK_OK(vp_st_writer_meta(&w, "format", "pt"));
    CHECK_OK(vp_st_writer_meta(&w, "config", "{\"B\": 6}"));
    CHECK_OK(vp_st_writer_meta(&w, "format", "vulpes"));
    CHECK_OK(vp_st_writer_add(&w, "layer.w", VP_F32, 2, sa, a));
    CHECK_OK(vp_st_writer_add(&w, "idx", VP_I32, 1, sb, b));
    CHECK_OK(vp_st_writer_add(&w, "half", VP_BF16, 1, sh, h));
    CHECK_OK(vp_st_writer_add(&w, "scalar", VP_F32, 0, NULL, &s));
    CHECK_OK(vp_st_writer_add(&w, "empty", VP_F32, 2, se, a));
    CHECK_STATUS(vp_st_writer_add(&w, "idx", VP_I32, 1, sb, b), VP_ERR_INVALID_ARG, "'idx' is taken");
    CHECK_STATUS(vp_st_writer_add(&w, "__metadata__", VP_I32, 1, sb, b), VP_ERR_INVALID_ARG, "taken");
    CHECK_OK(vp_st_writer_save(&w, g_path));
    vp_st_writer_free(&w);

    // The header length is a multiple of 8 and the file size adds up.
    FILE* fp = fopen(g_path, "rb");
    unsigned char len8[8] = {0};
    CHECK(fp && fread(len8, 1, 8, fp) == 8, "read length");
    uint64_t hl = 0;
    for (int i = 7; i >= 0; --i) hl = (hl << 8) | len8[i];
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    CHECK(hl % 8 == 0, "header length %llu not a multiple of 8", (unsigned long long)hl);
    CHECK(size == (long)(8 + hl + 24 + 20 + 6 + 4), "file size %ld", size);

    vp_st_file f;
    CHECK_OK(vp_st_load(&f, g_path));
    CHECK(f.n_entries == 5 && f.n_meta == 2, "%d entries, %d metadata", f.n_entries, f.n_meta);
    CHECK(vp_st_meta(&f, "format") && strcmp(vp_st_meta(&f, "format"), "vulpes") == 0, "metadata replaced");
    CHECK(vp_st_meta(&f, "config") && strcmp(vp_st_meta(&f, "config"), "{\"B\": 6}") == 0, "metadata with quotes");
    CHECK(vp_st_meta(&f, "absent") == NULL, "absent metadata");
    const vp_st_entry* e = vp_st_find(&f, "layer.w");
    CHECK(e && e->dtype == VP_F32 && e->ndim == 2 && e->shape[0] == 2 && e->shape[1] == 3, "layer.w entry");
    if (e) CHECK(memcmp(vp_st_data(&f, e), a, sizeof a) == 0, "layer.w data");
    int32_t b2[5];
    CHECK_OK(vp_st_read(&f, "idx", VP_I32, 5, b2));
    CHECK(memcmp(b, b2, sizeof b) == 0, "idx data");
    e = vp_st_find(&f, "half");
    CHECK(e && e->dtype == VP_BF16 && memcmp(vp_st_data(&f, e), h, sizeof h) == 0, "bf16 data");
    e = vp_st_find(&f, "scalar");
    float s2 = 0;  // its bytes follow the bf16 tensor's: not 4-byte aligned
    if (e) memcpy(&s2, vp_st_data(&f, e), sizeof s2);
    CHECK(e && e->ndim == 0 && e->numel == 1 && s2 == 42.0f, "scalar");
    e = vp_st_find(&f, "empty");
    CHECK(e && e->numel == 0 && e->bytes == 0, "empty tensor");
    CHECK_STATUS(vp_st_read(&f, "idx", VP_F32, 5, b2), VP_ERR_PARSE, "'idx' is i32");
    CHECK_STATUS(vp_st_read(&f, "idx", VP_I32, 4, b2), VP_ERR_SHAPE, "5 elements");
    CHECK_STATUS(vp_st_read(&f, "nope", VP_I32, 4, b2), VP_ERR_PARSE, "no tensor 'nope'");
    vp_st_free(&f);
}

/* A file as Python's safetensors lays it out (header padded with spaces). */
static void test_python_layout(void) {
    const char* hdr = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"I32\",\"shape\":[1],"
                      "\"data_offsets\":[8,12]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    char padded[256];
    size_t n = strlen(hdr), p = (n + 7) / 8 * 8;
    memcpy(padded, hdr, n);
    memset(padded + n, ' ', p - n);
    padded[p] = '\0';
    unsigned char data[12];
    float av[2] = {0.5f, -4.0f};
    int32_t bv = 99;
    memcpy(data, av, 8);
    memcpy(data + 8, &bv, 4);
    write_raw(padded, p, data, sizeof data);
    vp_st_file f;
    CHECK_OK(vp_st_load(&f, g_path));
    float a2[2] = {0};
    int32_t b2 = 0;
    CHECK_OK(vp_st_read(&f, "a", VP_F32, 2, a2));
    CHECK_OK(vp_st_read(&f, "b", VP_I32, 1, &b2));
    CHECK(a2[0] == 0.5f && a2[1] == -4.0f && b2 == 99, "values %g %g %d", (double)a2[0], (double)a2[1], b2);
    CHECK(strcmp(f.entries[0].name, "b") == 0, "header order kept");
    vp_st_free(&f);
}

static void test_broken_files(void) {
    vp_st_file f;
    unsigned char data[16] = {0};
    const char* h1 = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    // Data section shorter than the entry's range.
    write_raw(h1, strlen(h1), data, 8);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'x' spans bytes");
    // Header length beyond the file.
    write_raw(h1, 1000, data, 16);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "not a safetensors file");
    // Not JSON.
    const char* h2 = "{\"x\":{\"dtype\":";
    write_raw(h2, strlen(h2), data, 16);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "not valid JSON");
    // Unsupported dtype.
    const char* h3 = "{\"x\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    write_raw(h3, strlen(h3), data, 16);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "dtype F64");
    // Byte range that does not match the shape.
    const char* h4 = "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}";
    write_raw(h4, strlen(h4), data, 16);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "3 F32 elements need 12");
    // Metadata that is not a string.
    const char* h5 = "{\"__metadata__\":{\"n\":3}}";
    write_raw(h5, strlen(h5), data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "metadata 'n'");
    // Too short to hold a length.
    write_raw("", 0, NULL, 0);
    FILE* fp = fopen(g_path, "wb");
    if (fp) fclose(fp);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "not a safetensors file");
    CHECK_STATUS(vp_st_load(&f, "/nonexistent/dir/x.safetensors"), VP_ERR_IO, "cannot open");
    CHECK(f.entries == NULL && f.data == NULL, "failed load leaves an empty struct");
}

/* Saves a small valid file (a: F32 [2], b: I32 [3], metadata) to g_path and returns its
 * bytes (caller frees) and length. */
static unsigned char* valid_file(size_t* n) {
    vp_st_writer w;
    vp_st_writer_init(&w);
    float a[2] = {0.5f, -4.0f};
    int32_t b[3] = {1, 2, 3};
    int64_t sa[1] = {2}, sb[1] = {3};
    CHECK_OK(vp_st_writer_meta(&w, "format", "pt"));
    CHECK_OK(vp_st_writer_add(&w, "a", VP_F32, 1, sa, a));
    CHECK_OK(vp_st_writer_add(&w, "b", VP_I32, 1, sb, b));
    CHECK_OK(vp_st_writer_save(&w, g_path));
    vp_st_writer_free(&w);
    *n = 0;
    FILE* fp = fopen(g_path, "rb");
    unsigned char* buf = (unsigned char*)malloc(4096);
    if (fp && buf) *n = fread(buf, 1, 4096, fp);
    if (fp) fclose(fp);
    return buf;
}

/* Writes bytes[n] to g_path. */
static void write_bytes(const unsigned char* bytes, size_t n) {
    FILE* fp = fopen(g_path, "wb");
    CHECK(fp != NULL, "cannot create %s", g_path);
    if (fp) {
        if (n) fwrite(bytes, 1, n, fp);
        fclose(fp);
    }
}

/* Sets the 8-byte header length of bytes[]. */
static void set_hlen(unsigned char* bytes, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[i] = (unsigned char)(v >> (8 * i));
}

/* A header length that does not match the header: never a shifted read. */
static void test_header_length(void) {
    vp_st_file f;
    size_t n = 0;
    unsigned char* buf = valid_file(&n);
    CHECK(buf && n > 8 + 20, "valid file of %zu bytes", n);
    if (!buf || n <= 8 + 20) {
        free(buf);
        return;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; --i) hl = (hl << 8) | buf[i];
    CHECK(buf[8 + hl - 1] == ' ', "the writer's header ends with padding");
    CHECK_OK(vp_st_load(&f, g_path));
    vp_st_free(&f);
    // One byte short: the JSON still parses, and every tensor would start one byte early.
    set_hlen(buf, hl - 1);
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "follow the last tensor 'b'");
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, g_path);
    // One byte long: the header takes the first data byte.
    set_hlen(buf, hl + 1);
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "after the JSON");
    // -1, beyond the file, exactly the rest of the file (no room for the data).
    set_hlen(buf, UINT64_MAX);
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "not a safetensors file");
    set_hlen(buf, n - 7);
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "not a safetensors file");
    set_hlen(buf, n - 8);
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, g_path);
    // A header that does not begin with '{'.
    set_hlen(buf, hl);
    buf[8] = ' ';
    write_bytes(buf, n);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "begin with '{'");
    free(buf);
}

/* Header text + data: the header padded with spaces to a multiple of 8. */
static void write_padded(const char* hdr, const void* data, size_t n) {
    char padded[1024];
    size_t len = strlen(hdr), p = (len + 7) / 8 * 8;
    CHECK(p < sizeof padded, "header too long for the test");
    if (p >= sizeof padded) return;
    memcpy(padded, hdr, len);
    memset(padded + len, ' ', p - len);
    padded[p] = '\0';
    write_raw(padded, p, data, n);
}

/* Byte ranges: they tile the data area exactly, without overlaps, gaps or a tail. */
static void test_byte_ranges(void) {
    vp_st_file f;
    unsigned char data[32] = {0};
    // Trailing garbage after the last tensor.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data, 11);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "3 bytes of the 11-byte data area follow the last tensor 'a'");
    // Overlapping ranges.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                 data, 12);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'b' (bytes [4, 12)) overlaps tensor 'a'");
    // Two tensors on the same bytes.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                 data, 8);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "overlaps tensor");
    // A gap between two tensors.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                 data, 12);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "bytes [4, 8) before tensor 'b' belong to no tensor");
    // Data but no tensors.
    write_padded("{\"__metadata__\":{\"k\":\"v\"}}", data, 4);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "4 bytes of data but no tensor");
    // Out of order but tiling, with an empty tensor: accepted.
    write_padded("{\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                 "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                 data, 12);
    CHECK_OK(vp_st_load(&f, g_path));
    CHECK(f.n_entries == 3, "%d entries", f.n_entries);
    vp_st_free(&f);
    // Offsets outside the data area, reversed offsets.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", data, 8);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' spans bytes");
}

/* Numbers in shapes and offsets are non-negative integers; element counts do not overflow. */
static void test_numbers(void) {
    vp_st_file f;
    unsigned char data[32] = {0};
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.5,8.5]}}", data, 9);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' data_offsets[0] = 0.5 is not a non-negative integer");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,\"8\"]}}", data, 8);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' data_offsets");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,10]}}", data, 10);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' shape[0] = 2.5 is not a non-negative integer");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' shape[0] = -1 is not");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,1],\"data_offsets\":[0,0]}}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' has more elements than");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]}}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a'");
    // An empty extent makes the count 0 wherever it stands.
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}",
                 data, 0);
    CHECK_OK(vp_st_load(&f, g_path));
    CHECK(f.n_entries == 2 && f.entries[0].numel == 0 && f.entries[1].numel == 0, "empty tensors");
    vp_st_free(&f);
}

/* Names: no tensor twice, one metadata object of unique string pairs, no NUL. */
static void test_names(void) {
    vp_st_file f;
    unsigned char data[32] = {0};
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                 data, 8);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "tensor 'a' appears twice");
    write_padded("{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "metadata 'k' appears twice");
    write_padded("{\"__metadata__\":{\"k\":\"v\"},\"__metadata__\":{\"j\":\"w\"}}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "'__metadata__' appears twice");
    write_padded("{\"__metadata__\":\"text\"}", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "'__metadata__' is not an object");
    write_padded("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", data, 4);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "NUL");
    write_padded("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}x", data, 4);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, "after the JSON");
    write_padded("[1,2]", data, 0);
    CHECK_STATUS(vp_st_load(&f, g_path), VP_ERR_PARSE, g_path);
    // An escaped backslash before "u0000" is text, not a NUL.
    write_padded("{\"a\\\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", data, 4);
    CHECK_OK(vp_st_load(&f, g_path));
    CHECK(f.n_entries == 1 && strcmp(f.entries[0].name, "a\\u0000") == 0, "escaped backslash name");
    vp_st_free(&f);
}

/* A write that fails (a full disk) says why. */
static void test_write_errno(void) {
    vp_st_writer w;
    vp_st_writer_init(&w);
    float a[4] = {1, 2, 3, 4};
    int64_t sa[1] = {4};
    CHECK_OK(vp_st_writer_add(&w, "a", VP_F32, 1, sa, a));
    FILE* full = fopen("/dev/full", "wb");
    if (full) {
        fclose(full);
        CHECK_STATUS(vp_st_writer_save(&w, "/dev/full"), VP_ERR_IO, "No space left on device");
    }
    // Element counts the writer cannot hold.
    int64_t huge[3] = {4294967296LL, 4294967296LL, 1};
    CHECK_STATUS(vp_st_writer_add(&w, "h", VP_F32, 3, huge, a), VP_ERR_SHAPE, "vp_st_writer_add(h): the shape");
    vp_st_writer_free(&w);
}

int main(void) {
    snprintf(g_path, sizeof g_path, "/tmp/vp_test_safetensors_%d.st", (int)getpid());
    RUN_TEST(test_round_trip);
    RUN_TEST(test_python_layout);
    RUN_TEST(test_broken_files);
    RUN_TEST(test_header_length);
    RUN_TEST(test_byte_ranges);
    RUN_TEST(test_numbers);
    RUN_TEST(test_names);
    RUN_TEST(test_write_errno);
    remove(g_path);
    return vpt_finish();
}
