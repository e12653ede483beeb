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

/* Fills one entry from its JSON object; the message names the file and the entry. */
static vp_status parse_entry(const char* path, const cJSON* j, size_t data_bytes, vp_st_entry* e) {
    const char* nm = j->string;
    const cJSON* dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON* sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON* of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    VP_REQUIRE(cJSON_IsObject(j) && cJSON_IsString(dt) && cJSON_IsArray(sh) && cJSON_IsArray(of), VP_ERR_PARSE,
               "%s: tensor '%s' needs string dtype, array shape and array data_offsets", path, nm);
    VP_REQUIRE(dtype_from_tag(dt->valuestring, &e->dtype), VP_ERR_PARSE,
               "%s: tensor '%s' has dtype %s (F32, I32 and BF16 are supported)", path, nm, dt->valuestring);
    e->ndim = cJSON_GetArraySize(sh);
    VP_REQUIRE(e->ndim >= 0 && e->ndim <= VP_MAX_DIMS, VP_ERR_PARSE, "%s: tensor '%s' has %d dims (at most %d)", path,
               nm, e->ndim, VP_MAX_DIMS);
    e->numel = 1;
    int d = 0;
    const cJSON* x;
    cJSON_ArrayForEach(x, sh) {
        VP_REQUIRE(cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 9.0e15, VP_ERR_PARSE,
                   "%s: tensor '%s' has a bad extent at dim %d", path, nm, d);
        e->shape[d++] = (int64_t)x->valuedouble;
        e->numel *= (int64_t)x->valuedouble;
    }
    VP_REQUIRE(cJSON_GetArraySize(of) == 2 && cJSON_IsNumber(of->child) && cJSON_IsNumber(of->child->next),
               VP_ERR_PARSE, "%s: tensor '%s' data_offsets must be two numbers", path, nm);
    double b0 = of->child->valuedouble, b1 = of->child->next->valuedouble;
    VP_REQUIRE(b0 >= 0 && b1 >= b0 && b1 <= (double)data_bytes, VP_ERR_PARSE,
               "%s: tensor '%s' spans bytes [%.0f, %.0f) outside the %zu data bytes", path, nm, b0, b1, data_bytes);
    e->offset = (size_t)b0;
    e->bytes = (size_t)(b1 - b0);
    VP_REQUIRE(e->bytes == (size_t)e->numel * vp_dtype_size(e->dtype), VP_ERR_PARSE,
               "%s: tensor '%s' holds %zu bytes, but %lld %s elements need %zu", path, nm, e->bytes,
               (long long)e->numel, dt->valuestring, (size_t)e->numel * vp_dtype_size(e->dtype));
    e->name = dup_str(nm);
    VP_REQUIRE(e->name != NULL, VP_ERR_OOM, "%s: out of memory", path);
    return VP_OK;
}

/* Parses the JSON header into f (entries and metadata). */
static vp_status parse_header(const char* path, const char* text, size_t len, vp_st_file* f) {
    cJSON* root = cJSON_ParseWithLength(text, len);
    VP_REQUIRE(root != NULL, VP_ERR_PARSE, "%s: the header is not valid JSON (near byte %ld)", path,
               cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    vp_status s = VP_OK;
    int n = cJSON_GetArraySize(root);
    f->entries = (vp_st_entry*)calloc((size_t)(n > 0 ? n : 1), sizeof *f->entries);
    const cJSON* j;
    if (!cJSON_IsObject(root)) s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: the header is not a JSON object", path);
    if (s == VP_OK && !f->entries) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", path);
    cJSON_ArrayForEach(j, root) {
        if (s != VP_OK) break;
        if (strcmp(j->string, "__metadata__") == 0) {
            // Metadata: an object of string pairs.
            int m = cJSON_GetArraySize(j);
            f->meta_keys = (char**)calloc((size_t)(m > 0 ? m : 1), sizeof(char*));
            f->meta_values = (char**)calloc((size_t)(m > 0 ? m : 1), sizeof(char*));
            if (!f->meta_keys || !f->meta_values) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", path);
            const cJSON* kv;
            cJSON_ArrayForEach(kv, j) {
                if (s != VP_OK) break;
                if (!cJSON_IsObject(j) || !cJSON_IsString(kv)) {
                    s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: metadata '%s' is not a string", path, kv->string);
                    break;
                }
                f->meta_keys[f->n_meta] = dup_str(kv->string);
                f->meta_values[f->n_meta++] = dup_str(kv->valuestring);
            }
            continue;
        }
        s = parse_entry(path, j, f->data_bytes, &f->entries[f->n_entries]);
        if (s == VP_OK) f->n_entries++;
    }
    cJSON_Delete(root);
    return s;
}

vp_status vp_st_load(vp_st_file* f, const char* path) {
    VP_REQUIRE(f != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_st_load: file or path is NULL");
    memset(f, 0, sizeof *f);
    FILE* fp = fopen(path, "rb");
    VP_REQUIRE(fp != NULL, VP_ERR_IO, "vp_st_load: cannot open %s: %s", path, strerror(errno));
    // File size, then the 8-byte header length.
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
    fclose(fp);
    if (!ok) {
        free(text);
        vp_st_free(f);
        VP_FAIL(VP_ERR_IO, "vp_st_load: reading %s failed", path);
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
    for (int d = 0; d < ndim; ++d) {
        VP_REQUIRE(shape[d] >= 0, VP_ERR_SHAPE, "vp_st_writer_add(%s): extent %d is %lld", name, d,
                   (long long)shape[d]);
        e.shape[d] = shape[d];
        e.numel *= shape[d];
    }
    e.bytes = (size_t)e.numel * vp_dtype_size(dtype);
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
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(text, 1, n, fp) == n;
    for (size_t i = n; ok && i < padded; ++i) ok = fputc(' ', fp) != EOF;
    ok = ok && (w->f.data_bytes == 0 || fwrite(w->f.data, 1, w->f.data_bytes, fp) == w->f.data_bytes);
    ok = (fclose(fp) == 0) && ok;
    free(text);
    VP_REQUIRE(ok, VP_ERR_IO, "vp_st_writer_save: writing %s failed", path);
    return VP_OK;
}

void vp_st_writer_free(vp_st_writer* w) {
    if (!w) return;
    vp_st_free(&w->f);
    memset(w, 0, sizeof *w);
}
