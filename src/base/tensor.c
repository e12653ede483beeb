/* Tensor views: sizes, names and descriptions. */
#include "vulpes/tensor.h"

#include <stdio.h>

size_t vp_dtype_size(vp_dtype t) {
    switch (t) {
    case VP_F32: return 4;
    case VP_I32: return 4;
    case VP_BF16: return 2;
    default: return 0;
    }
}

const char* vp_dtype_name(vp_dtype t) {
    switch (t) {
    case VP_F32: return "f32";
    case VP_I32: return "i32";
    case VP_BF16: return "bf16";
    default: return "?";
    }
}

const char* vp_mem_name(vp_mem m) {
    switch (m) {
    case VP_MEM_HOST: return "host";
    case VP_MEM_DEVICE: return "device";
    case VP_MEM_MAPPED: return "mapped";
    default: return "?";
    }
}

int64_t vp_tensor_numel(const vp_tensor* t) {
    if (!t || t->ndim < 1 || t->ndim > VP_MAX_DIMS) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
    return n;
}

size_t vp_tensor_bytes(const vp_tensor* t) {
    return (size_t)vp_tensor_numel(t) * vp_dtype_size(t ? t->dtype : VP_DTYPE_COUNT);
}

vp_tensor vp_tensor_1d(void* data, vp_dtype dtype, vp_mem mem, int64_t n) {
    vp_tensor t = {data, dtype, mem, 1, {n, 1, 1, 1}};
    return t;
}

vp_tensor vp_tensor_2d(void* data, vp_dtype dtype, vp_mem mem, int64_t rows, int64_t cols) {
    vp_tensor t = {data, dtype, mem, 2, {rows, cols, 1, 1}};
    return t;
}

vp_tensor vp_tensor_3d(void* data, vp_dtype dtype, vp_mem mem, int64_t a, int64_t b, int64_t c) {
    vp_tensor t = {data, dtype, mem, 3, {a, b, c, 1}};
    return t;
}

int64_t vp_tensor_cols(const vp_tensor* t) {
    if (!t || t->ndim < 1) return 0;
    return t->shape[t->ndim - 1];
}

int64_t vp_tensor_rows(const vp_tensor* t) {
    int64_t c = vp_tensor_cols(t);
    return c > 0 ? vp_tensor_numel(t) / c : 0;
}

const char* vp_tensor_describe(const vp_tensor* t, char* buf, size_t n) {
    if (!t) {
        snprintf(buf, n, "(null tensor)");
        return buf;
    }
    int off = snprintf(buf, n, "%s[", vp_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && i < VP_MAX_DIMS && off > 0 && (size_t)off < n; ++i)
        off += snprintf(buf + off, n - (size_t)off, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (off > 0 && (size_t)off < n) snprintf(buf + off, n - (size_t)off, "]@%s", vp_mem_name(t->mem));
    return buf;
}
