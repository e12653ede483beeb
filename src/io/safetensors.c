/* safetensors reading and writing through cJSON. The host is little-endian (x86-64,
 * aarch64), as the format's data is, so tensors are copied byte for byte. */
#include "io/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Largest JSON header accepted (the Python package's limit is 100 MB). */
#define VP_ST_MAX_HEADER ((uint64_t)100 << 20)

/* ---- dtypes ---------------------------------------------------------------------------- */

static const char* dtype_tag(vp_dtype t) {
    switch (t) {
    case VP_F32: return "F32";
    case VP_I32: return "I32";
    case VP_BF16: return "BF16";
    default: return NULL;
    }
}

static int dtype_from_tag(const char* s, vp_dtype* out) {
    for (int t = 0; t < VP_DTYPE_COUNT; ++t) {
        if (strcmp(s, dtype_tag((vp_dtype)t)) == 0) {
            *out = (vp_dtype)t;
            return 1;
        }
    }
    return 0;
}

static char* dup_str(const char* s) {
    size_t n = strlen(s) + 1;
    char* p = (char*)malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* Largest integer a JSON number holds exactly (2^53). */
#define VP_ST_MAX_INT 9007199254740992.0

/* Reads a JSON number that must be a non-negative integer into *out; 0 when it is not one. */
static int json_uint(const cJSON* x, uint64_t* out) {
    if (!cJSON_IsNumber(x)) return 0;
    double v = x->valuedouble;
    if (!(v >= 0 && v <= VP_ST_MAX_INT) || v != (double)(uint64_t)v) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* The text of a JSON value for a message ("0.5", "\"8\"", "null") into buf[n]. */
static const char* json_text(const cJSON* x, char* buf, size_t n) {
    char* t = x ? cJSON_PrintUnformatted(x) : NULL;
    snprintf(buf, n, "%s", t ? t : "(missing)");
    free(t);
    return buf;
}

/* Fills one entry from its JSON object: dtype, shape (non-negative integers whose product
 * and byte count do not overflow), data_offsets (two integers inside the data area spanning
 * exactly the shape's bytes); the message names the file and the entry. */
static vp_status parse_entry(const char* path, const cJSON* j, size_t data_bytes, vp_st_entry* e) {
    const char* nm = j->string;
    const cJSON* dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON* sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON* of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    char txt[64];
    VP_REQUIRE(cJSON_IsObject(j) && cJSON_IsString(dt) && cJSON_IsArray(sh) && cJSON_IsArray(of), VP_ERR_PARSE,
               "%s: tensor '%s' needs string dtype, array shape and array data_offsets", path, nm);
    VP_REQUIRE(dtype_from_tag(dt->valuestring, &e->dtype), VP_ERR_PARSE,
               "%s: tensor '%s' has dtype %s (F32, I32 and BF16 are supported)", path, nm, dt->valuestring);
    e->ndim = cJSON_GetArraySize(sh);
    VP_REQUIRE(e->ndim >= 0 && e->ndim <= VP_MAX_DIMS, VP_ERR_PARSE, "%s: tensor '%s' has %d dims (at most %d)", path,
               nm, e->ndim, VP_MAX_DIMS);
    // Extents, and their product without overflow (an empty extent makes the count 0).
    int d = 0, overflow = 0, empty = 0;
    uint64_t numel = 1;
    const cJSON* x;
    cJSON_ArrayForEach(x, sh) {
        uint64_t v = 0;
        VP_REQUIRE(json_uint(x, &v), VP_ERR_PARSE, "%s: tensor '%s' shape[%d] = %s is not a non-negative integer",
                   path, nm, d, json_text(x, txt, sizeof txt));
        e->shape[d++] = (int64_t)v;
        if (__builtin_mul_overflow(numel, v, &numel)) overflow = 1;
        if (v == 0) empty = 1;
    }
    if (empty) {
        numel = 0;
        overflow = 0;
    }
    uint64_t need = 0;
    VP_REQUIRE(!overflow && numel <= (uint64_t)INT64_MAX &&
                   !__builtin_mul_overflow(numel, (uint64_t)vp_dtype_size(e->dtype), &need) && need <= SIZE_MAX,
               VP_ERR_PARSE, "%s: tensor '%s' has more elements than a file can hold", path, nm);
    e->numel = (int64_t)numel;
    // The byte range: two integers, ordered, inside the data area, as long as the shape needs.
    VP_REQUIRE(cJSON_GetArraySize(of) == 2, VP_ERR_PARSE, "%s: tensor '%s' data_offsets must be two numbers", path, nm);
    uint64_t b[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        const cJSON* o = cJSON_GetArrayItem(of, k);
        VP_REQUIRE(json_uint(o, &b[k]), VP_ERR_PARSE,
                   "%s: tensor '%s' data_offsets[%d] = %s is not a non-negative integer", path, nm, k,
                   json_text(o, txt, sizeof txt));
    }
    VP_REQUIRE(b[1] >= b[0] && b[1] <= (uint64_t)data_bytes, VP_ERR_PARSE,
               "%s: tensor '%s' spans bytes [%llu, %llu) outside the %zu data bytes", path, nm,
               (unsigned long long)b[0], (unsigned long long)b[1], data_bytes);
    e->offset = (size_t)b[0];
    e->bytes = (size_t)(b[1] - b[0]);
    VP_REQUIRE(e->bytes == (size_t)need, VP_ERR_PARSE, "%s: tensor '%s' holds %zu bytes, but %lld %s elements need %zu",
               path, nm, e->bytes, (long long)e->numel, dt->valuestring, (size_t)need);
    e->name = dup_str(nm);
    VP_REQUIRE(e->name != NULL, VP_ERR_OOM, "%s: out of memory", path);
    return VP_OK;
}

/* Order of entries by byte range (start, then end), for the tiling check. */
static int by_offset(const void* pa, const void* pb) {
    const vp_st_entry* a = *(const vp_st_entry* const*)pa;
    const vp_st_entry* b = *(const vp_st_entry* const*)pb;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    return 0;
}

/* Order of C strings, for the duplicate checks. */
static int by_text(const void* pa, const void* pb) { return strcmp(*(const char* const*)pa, *(const char* const*)pb); }

/* A name that occurs twice in names[n] (sorted in place), or NULL. */
static const char* repeated(const char** names, int n) {
    qsort(names, (size_t)n, sizeof *names, by_text);
    for (int i = 1; i < n; ++i)
        if (strcmp(names[i - 1], names[i]) == 0) return names[i];
    return NULL;
}

/* Checks that no name repeats and that the tensors' byte ranges tile the data area exactly
 * (in any order; empty tensors take no bytes), as the format requires: no overlaps, no
 * bytes that belong to no tensor, nothing after the last one. */
static vp_status check_layout(const char* path, const vp_st_file* f) {
    if (f->n_entries == 0) {
        VP_REQUIRE(f->data_bytes == 0, VP_ERR_PARSE, "%s: %zu bytes of data but no tensor in the header", path,
                   f->data_bytes);
        return VP_OK;
    }
    const vp_st_entry** order = (const vp_st_entry**)malloc(sizeof *order * (size_t)f->n_entries);
    const char** names = (const char**)malloc(sizeof *names * (size_t)f->n_entries);
    vp_status s = (order && names) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", path);
    for (int i = 0; s == VP_OK && i < f->n_entries; ++i) {
        order[i] = &f->entries[i];
        names[i] = f->entries[i].name;
    }
    const char* twice = s == VP_OK ? repeated(names, f->n_entries) : NULL;
    if (twice) s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: tensor '%s' appears twice in the header", path, twice);
    if (s == VP_OK) qsort(order, (size_t)f->n_entries, sizeof *order, by_offset);
    size_t at = 0;
    const vp_st_entry* prev = NULL;
    for (int i = 0; s == VP_OK && i < f->n_entries; ++i) {
        const vp_st_entry* e = order[i];
        if (e->offset < at)
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: tensor '%s' (bytes [%zu, %zu)) overlaps tensor '%s' (bytes "
                             "[%zu, %zu))", path, e->name, e->offset, e->offset + e->bytes, prev->name, prev->offset,
                             prev->offset + prev->bytes);
        else if (e->offset > at)
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: bytes [%zu, %zu) before tensor '%s' belong to no tensor",
                             path, at, e->offset, e->name);
        at = e->offset + e->bytes;
        if (e->bytes > 0 || !prev) prev = e;
    }
    if (s == VP_OK && at != f->data_bytes)
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: %zu bytes of the %zu-byte data area follow the last tensor '%s' "
                         "(trailing bytes, or a header length that does not match the header)", path,
                         f->data_bytes - at, f->data_bytes, prev->name);
    free(order);
    free(names);
    return s;
}

/* Whether the JSON text[0, len) holds an escaped NUL (\u0000, not preceded by an escaped
 * backslash), which a C string cannot keep. */
static int has_escaped_nul(const char* text, size_t len) {
    for (size_t i = 0; i + 6 <= len; ++i) {
        if (text[i] != '\\' || memcmp(text + i + 1, "u0000", 5) != 0) continue;
        size_t k = 0;
        while (k < i && text[i - 1 - k] == '\\') ++k;
        if (k % 2 == 0) return 1;
    }
    return 0;
}

/* Reads the "__metadata__" object (string pairs, unique keys) into f. */
static vp_status parse_meta(const char* path, const cJSON* j, vp_st_file* f) {
    VP_REQUIRE(f->meta_keys == NULL, VP_ERR_PARSE, "%s: '__metadata__' appears twice in the header", path);
    VP_REQUIRE(cJSON_IsObject(j), VP_ERR_PARSE, "%s: '__metadata__' is not an object", path);
    int m = cJSON_GetArraySize(j);
    f->meta_keys = (char**)calloc((size_t)(m > 0 ? m : 1), sizeof(char*));
    f->meta_values = (char**)calloc((size_t)(m > 0 ? m : 1), sizeof(char*));
    VP_REQUIRE(f->meta_keys && f->meta_values, VP_ERR_OOM, "%s: out of memory", path);
    const cJSON* kv;
    cJSON_ArrayForEach(kv, j) {
        VP_REQUIRE(cJSON_IsString(kv), VP_ERR_PARSE, "%s: metadata '%s' is not a string", path, kv->string);
        f->meta_keys[f->n_meta] = dup_str(kv->string);
        f->meta_values[f->n_meta] = dup_str(kv->valuestring);
        f->n_meta++;
        VP_REQUIRE(f->meta_keys[f->n_meta - 1] && f->meta_values[f->n_meta - 1], VP_ERR_OOM, "%s: out of memory",
                   path);
    }
    // No key twice.
    const char** keys = (const char**)malloc(sizeof *keys * (size_t)(m > 0 ? m : 1));
    VP_REQUIRE(keys != NULL, VP_ERR_OOM, "%s: out of memory", path);
    memcpy(keys, f->meta_keys, sizeof *keys * (size_t)f->n_meta);
    const char* twice = repeated(keys, f->n_meta);
    vp_status s = twice ? vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: metadata '%s' appears twice", path, twice) : VP_OK;
    free(keys);
    return s;
}

/* Parses the JSON header into f (entries and metadata): one JSON object beginning at the
 * first byte, followed by nothing but space padding. */
static vp_status parse_header(const char* path, const char* text, size_t len, vp_st_file* f) {
    VP_REQUIRE(len > 0 && text[0] == '{', VP_ERR_PARSE, "%s: the header does not begin with '{'", path);
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    VP_REQUIRE(root != NULL, VP_ERR_PARSE, "%s: the header is not valid JSON (near byte %ld)", path,
               cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    vp_status s = VP_OK;
    size_t used = end ? (size_t)(end - text) : len;
    for (size_t i = used; s == VP_OK && i < len; ++i)
        if (text[i] != ' ')
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: header byte %zu after the JSON is 0x%02x, not a space "
                             "(a header length that does not match the header?)", path, i, (unsigned char)text[i]);
    if (s == VP_OK && (memchr(text, '\0', used) != NULL || has_escaped_nul(text, used)))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: the header holds a NUL character", path);
    int n = cJSON_GetArraySize(root);
    if (s == VP_OK && !cJSON_IsObject(root))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: the header is not a JSON object", path);
    if (s == VP_OK) f->entries = (vp_st_entry*)calloc((size_t)(n > 0 ? n : 1), sizeof *f->entries);
    if (s == VP_OK && !f->entries) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", path);
    const cJSON* j;
    cJSON_ArrayForEach(j, root) {
        if (s != VP_OK) break;
        if (strcmp(j->string, "__metadata__") == 0) {
            s = parse_meta(path, j, f);
            continue;
        }
        s = parse_entry(path, j, f->data_bytes, &f->entries[f->n_entries]);
        if (s == VP_OK) f->n_entries++;
    }
    cJSON_Delete(root);
    if (s == VP_OK) s = check_layout(path, f);
    return s;
}

vp_status vp_st_load(vp_st_file* f, const char* path) {
    VP_REQUIRE(f != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_st_load: file or path is NULL");
    memset(f, 0, sizeof *f);
    FILE* fp = fopen(path, "rb");
    VP_REQUIRE(fp != NULL, VP_ERR_IO, "vp_st_load: cannot open %s: %s", path, strerror(errno));
    // File size, then the 8-byte header length: the header lies inside the file.
    unsigned char len8[8];
    long size = (fseek(fp, 0, SEEK_END) == 0) ? ftell(fp) : -1;
    int ok = size >= 8 && fseek(fp, 0, SEEK_SET) == 0 && fread(len8, 1, 8, fp) == 8;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | len8[i];
    if (!ok || hlen > VP_ST_MAX_HEADER || hlen > (uint64_t)size - 8) {
        fclose(fp);
        VP_FAIL(VP_ERR_PARSE, "vp_st_load: %s is not a safetensors file (size %ld, header length %llu)", path, size,
                (unsigned long long)hlen);
    }
    // Header text and the data section.
    char* text = (char*)malloc((size_t)hlen + 1);
    f->data_bytes = (size_t)size - 8 - (size_t)hlen;
    f->data = (unsigned char*)aligned_alloc(64, (f->data_bytes + 63) / 64 * 64 + 64);
    ok = text && f->data && fread(text, 1, (size_t)hlen, fp) == (size_t)hlen &&
         fread(f->data, 1, f->data_bytes, fp) == f->data_bytes;
    int err = errno;
    fclose(fp);
    if (!ok) {
        const char* why = (!text || !f->data) ? "out of memory" : (err ? strerror(err) : "the file is shorter than it was");
        free(text);
        vp_st_free(f);
        VP_FAIL(VP_ERR_IO, "vp_st_load: reading %s failed: %s", path, why);
    }
    text[hlen] = '\0';
    vp_status s = parse_header(path, text, (size_t)hlen, f);
    free(text);
    if (s != VP_OK) vp_st_free(f);
    return s;
}

void vp_st_free(vp_st_file* f) {
    if (!f) return;
    for (int i = 0; i < f->n_entries; ++i) free(f->entries[i].name);
    for (int i = 0; i < f->n_meta; ++i) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->entries);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->data);
    memset(f, 0, sizeof *f);
}

const vp_st_entry* vp_st_find(const vp_st_file* f, const char* name) {
    if (!f || !name) return NULL;
    for (int i = 0; i < f->n_entries; ++i)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    return NULL;
}

const void* vp_st_data(const vp_st_file* f, const vp_st_entry* e) { return f && e ? f->data + e->offset : NULL; }

const char* vp_st_meta(const vp_st_file* f, const char* key) {
    if (!f || !key) return NULL;
    for (int i = 0; i < f->n_meta; ++i)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

vp_status vp_st_read(const vp_st_file* f, const char* name, vp_dtype dtype, int64_t numel, void* dst) {
    VP_REQUIRE(f != NULL && name != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_st_read: NULL argument");
    const vp_st_entry* e = vp_st_find(f, name);
    VP_REQUIRE(e != NULL, VP_ERR_PARSE, "vp_st_read: no tensor '%s' in the file", name);
    VP_REQUIRE(e->dtype == dtype, VP_ERR_PARSE, "vp_st_read: tensor '%s' is %s, expected %s", name,
               vp_dtype_name(e->dtype), vp_dtype_name(dtype));
    VP_REQUIRE(e->numel == numel, VP_ERR_SHAPE, "vp_st_read: tensor '%s' has %lld elements, expected %lld", name,
               (long long)e->numel, (long long)numel);
    memcpy(dst, f->data + e->offset, e->bytes);
    return VP_OK;
}

/* ---- writing ------------------------------------------------------------------------------- */

void vp_st_writer_init(vp_st_writer* w) {
    if (w) memset(w, 0, sizeof *w);
}

vp_status vp_st_writer_meta(vp_st_writer* w, const char* key, const char* value) {
    VP_REQUIRE(w != NULL && key != NULL && value != NULL, VP_ERR_INVALID_ARG, "vp_st_writer_meta: NULL argument");
    vp_st_file* f = &w->f;
    // Replace an existing key in place.
    for (int i = 0; i < f->n_meta; ++i) {
        if (strcmp(f->meta_keys[i], key) != 0) continue;
        char* v = dup_str(value);
        VP_REQUIRE(v != NULL, VP_ERR_OOM, "vp_st_writer_meta: out of memory");
        free(f->meta_values[i]);
        f->meta_values[i] = v;
        return VP_OK;
    }
    if (f->n_meta == w->cap_meta) {
        int cap = w->cap_meta ? 2 * w->cap_meta : 16;
        char** k = (char**)realloc(f->meta_keys, sizeof(char*) * (size_t)cap);
        if (k) f->meta_keys = k;
        char** v = (char**)realloc(f->meta_values, sizeof(char*) * (size_t)cap);
        if (v) f->meta_values = v;
        VP_REQUIRE(k && v, VP_ERR_OOM, "vp_st_writer_meta: out of memory");
        w->cap_meta = cap;
    }
    f->meta_keys[f->n_meta] = dup_str(key);
    f->meta_values[f->n_meta] = dup_str(value);
    VP_REQUIRE(f->meta_keys[f->n_meta] && f->meta_values[f->n_meta], VP_ERR_OOM, "vp_st_writer_meta: out of memory");
    f->n_meta++;
    return VP_OK;
}

vp_status vp_st_writer_add(vp_st_writer* w, const char* name, vp_dtype dtype, int ndim, const int64_t* shape,
                           const void* data) {
    VP_REQUIRE(w != NULL && name != NULL && data != NULL && (ndim == 0 || shape != NULL), VP_ERR_INVALID_ARG,
               "vp_st_writer_add: NULL argument");
    VP_REQUIRE(dtype_tag(dtype) != NULL, VP_ERR_INVALID_ARG, "vp_st_writer_add(%s): bad dtype %d", name, (int)dtype);
    VP_REQUIRE(ndim >= 0 && ndim <= VP_MAX_DIMS, VP_ERR_SHAPE, "vp_st_writer_add(%s): ndim %d", name, ndim);
    VP_REQUIRE(strcmp(name, "__metadata__") != 0 && vp_st_find(&w->f, name) == NULL, VP_ERR_INVALID_ARG,
               "vp_st_writer_add: tensor name '%s' is taken", name);
    vp_st_file* f = &w->f;
    vp_st_entry e;
    memset(&e, 0, sizeof e);
    e.dtype = dtype;
    e.ndim = ndim;
    e.numel = 1;
    int overflow = 0, empty = 0;
    for (int d = 0; d < ndim; ++d) {
        VP_REQUIRE(shape[d] >= 0, VP_ERR_SHAPE, "vp_st_writer_add(%s): extent %d is %lld", name, d,
                   (long long)shape[d]);
        e.shape[d] = shape[d];
        if (__builtin_mul_overflow(e.numel, shape[d], &e.numel)) overflow = 1;
        if (shape[d] == 0) empty = 1;
    }
    if (empty) {
        e.numel = 0;
        overflow = 0;
    }
    VP_REQUIRE(!overflow && !__builtin_mul_overflow((size_t)e.numel, vp_dtype_size(dtype), &e.bytes), VP_ERR_SHAPE,
               "vp_st_writer_add(%s): the shape has more elements than a file can hold", name);
    e.offset = f->data_bytes;
    // Grow the entry table and the data block as needed.
    if (f->n_entries == w->cap_entries) {
        int cap = w->cap_entries ? 2 * w->cap_entries : 64;
        vp_st_entry* p = (vp_st_entry*)realloc(f->entries, sizeof *p * (size_t)cap);
        VP_REQUIRE(p != NULL, VP_ERR_OOM, "vp_st_writer_add(%s): out of memory", name);
        f->entries = p;
        w->cap_entries = cap;
    }
    if (f->data_bytes + e.bytes > w->capacity) {
        size_t cap = w->capacity ? w->capacity : 4096;
        while (cap < f->data_bytes + e.bytes) cap *= 2;
        unsigned char* p = (unsigned char*)realloc(f->data, cap);
        VP_REQUIRE(p != NULL, VP_ERR_OOM, "vp_st_writer_add(%s): out of memory for %zu bytes", name, cap);
        f->data = p;
        w->capacity = cap;
    }
    e.name = dup_str(name);
    VP_REQUIRE(e.name != NULL, VP_ERR_OOM, "vp_st_writer_add(%s): out of memory", name);
    if (e.bytes) memcpy(f->data + e.offset, data, e.bytes);
    f->data_bytes += e.bytes;
    f->entries[f->n_entries++] = e;
    return VP_OK;
}

/* The JSON header of a writer's file, unpadded (caller frees). */
static char* header_json(const vp_st_file* f) {
    cJSON* root = cJSON_CreateObject();
    if (!root) return NULL;
    if (f->n_meta > 0) {
        cJSON* m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; m && i < f->n_meta; ++i) cJSON_AddStringToObject(m, f->meta_keys[i], f->meta_values[i]);
    }
    for (int i = 0; i < f->n_entries; ++i) {
        const vp_st_entry* e = &f->entries[i];
        cJSON* o = cJSON_AddObjectToObject(root, e->name);
        if (!o) break;
        cJSON_AddStringToObject(o, "dtype", dtype_tag(e->dtype));
        cJSON* sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; sh && d < e->ndim; ++d) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)e->shape[d]));
        cJSON* of = cJSON_AddArrayToObject(o, "data_offsets");
        if (of) {
            cJSON_AddItemToArray(of, cJSON_CreateNumber((double)e->offset));
            cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(e->offset + e->bytes)));
        }
    }
    char* text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

vp_status vp_st_writer_save(const vp_st_writer* w, const char* path) {
    VP_REQUIRE(w != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_st_writer_save: writer or path is NULL");
    char* text = header_json(&w->f);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "vp_st_writer_save(%s): out of memory building the header", path);
    // Header length padded with spaces to a multiple of 8, little-endian.
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    unsigned char len8[8];
    for (int i = 0; i < 8; ++i) len8[i] = (unsigned char)(((uint64_t)padded >> (8 * i)) & 0xffu);
    FILE* fp = fopen(path, "wb");
    if (!fp) {
        free(text);
        VP_FAIL(VP_ERR_IO, "vp_st_writer_save: cannot create %s: %s", path, strerror(errno));
    }
    // The first failure's errno (a full disk shows at a write, the flush or the close).
    errno = 0;
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(text, 1, n, fp) == n;
    for (size_t i = n; ok && i < padded; ++i) ok = fputc(' ', fp) != EOF;
    ok = ok && (w->f.data_bytes == 0 || fwrite(w->f.data, 1, w->f.data_bytes, fp) == w->f.data_bytes);
    ok = ok && fflush(fp) == 0;
    int err = ok ? 0 : errno;
    if (fclose(fp) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    free(text);
    VP_REQUIRE(ok, VP_ERR_IO, "vp_st_writer_save: writing %s failed: %s", path, strerror(err ? err : EIO));
    return VP_OK;
}

void vp_st_writer_free(vp_st_writer* w) {
    if (!w) return;
    vp_st_free(&w->f);
    memset(w, 0, sizeof *w);
}
