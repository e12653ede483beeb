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
    CHECK(e && e->ndim == 0 && e->numel == 1 && *(const float*)vp_st_data(&f, e) == 42.0f, "scalar");
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

int main(void) {
    snprintf(g_path, sizeof g_path, "/tmp/vp_test_safetensors_%d.st", (int)getpid());
    RUN_TEST(test_round_trip);
    RUN_TEST(test_python_layout);
    RUN_TEST(test_broken_files);
    remove(g_path);
    return vpt_finish();
}
