/* Backend lifecycle, memory, arenas and graphs: checks, then the backend's table. */
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"

#ifndef VP_HAVE_CUDA
vp_status vp_cuda_backend_create(vp_backend** out, int device) {
    (void)device;
    if (out) *out = NULL;
    VP_FAIL(VP_ERR_UNSUPPORTED, "this build of vulpes has no CUDA backend (nvcc was not found at build time)");
}
#endif

vp_status vp_backend_cpu_init(vp_backend** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_backend_cpu_init: out is NULL");
    return vp_cpu_backend_create(out);
}

vp_status vp_backend_cuda_init(vp_backend** out, int device) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_backend_cuda_init: out is NULL");
    VP_REQUIRE(device >= 0, VP_ERR_INVALID_ARG, "vp_backend_cuda_init: device %d < 0", device);
    return vp_cuda_backend_create(out, device);
}

vp_status vp_backend_best_init(vp_backend** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_backend_best_init: out is NULL");
    if (vp_cuda_backend_create(out, 0) == VP_OK) return VP_OK;
    vp_log(VP_LOG_INFO, "no usable GPU (%s); using the CPU backend", vp_last_error());
    vp_clear_error();
    return vp_cpu_backend_create(out);
}

void vp_backend_free(vp_backend* b) {
    if (b) b->ops->destroy(b);
}

vp_backend_kind vp_backend_get_kind(const vp_backend* b) { return b ? b->kind : VP_BACKEND_KIND_COUNT; }

const char* vp_backend_name(const vp_backend* b) { return b ? b->name : "(null backend)"; }

int vp_backend_can_read(const vp_backend* b, vp_mem m) {
    if (!b) return 0;
    if (m == VP_MEM_MAPPED) return 1;
    return b->kind == VP_BACKEND_CPU ? m == VP_MEM_HOST : m == VP_MEM_DEVICE;
}

vp_mem vp_backend_native_mem(const vp_backend* b) {
    return (b && b->kind == VP_BACKEND_CUDA) ? VP_MEM_DEVICE : VP_MEM_HOST;
}

vp_status vp_backend_sync(vp_backend* b) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "vp_backend_sync: backend is NULL");
    b->counters.syncs++;
    return b->ops->sync(b);
}

vp_status vp_backend_lane(vp_backend* b, vp_backend** lane) {
    VP_REQUIRE(b != NULL && lane != NULL, VP_ERR_INVALID_ARG, "vp_backend_lane: backend or lane is NULL");
    *lane = NULL;
    return b->ops->lane(b, lane);
}

void vp_backend_lane_free(vp_backend* b, vp_backend* lane) {
    if (lane && lane != b) vp_backend_free(lane);
}

vp_status vp_backend_after(vp_backend* to, vp_backend* from) {
    VP_REQUIRE(to != NULL && from != NULL, VP_ERR_INVALID_ARG, "vp_backend_after: a backend is NULL");
    VP_REQUIRE(to->kind == from->kind, VP_ERR_INVALID_ARG, "vp_backend_after: %s cannot wait on %s", to->name,
               from->name);
    return to->ops->after(to, from);
}

static vp_status check_transfer(const char* fn, vp_backend* b, const vp_tensor* t, const void* host,
                                size_t bytes) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "%s: backend is NULL", fn);
    VP_REQUIRE(t != NULL && t->data != NULL, VP_ERR_INVALID_ARG, "%s: tensor is NULL", fn);
    VP_REQUIRE(host != NULL, VP_ERR_INVALID_ARG, "%s: host pointer is NULL", fn);
    VP_REQUIRE(vp_backend_can_read(b, t->mem), VP_ERR_DEVICE, "%s: tensor lives in %s memory, which backend %s cannot reach",
               fn, vp_mem_name(t->mem), b->name);
    VP_REQUIRE(bytes <= vp_tensor_bytes(t), VP_ERR_SHAPE, "%s: %zu bytes do not fit a tensor of %zu bytes", fn, bytes,
               vp_tensor_bytes(t));
    return VP_OK;
}

vp_status vp_upload(vp_backend* b, vp_tensor* dst, const void* src_host, size_t bytes) {
    VP_TRY(check_transfer("vp_upload", b, dst, src_host, bytes));
    b->counters.copies++;
    return b->ops->upload(b, dst->data, src_host, bytes);
}

vp_status vp_download(vp_backend* b, void* dst_host, const vp_tensor* src, size_t bytes) {
    VP_TRY(check_transfer("vp_download", b, src, dst_host, bytes));
    b->counters.copies++;
    return b->ops->download(b, dst_host, src->data, bytes);
}

vp_status vp_buffer_alloc(vp_backend* b, vp_mem m, size_t bytes, vp_buffer* out) {
    VP_REQUIRE(b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_buffer_alloc: backend or out is NULL");
    VP_REQUIRE(m >= 0 && m < VP_MEM_COUNT, VP_ERR_INVALID_ARG, "vp_buffer_alloc: bad memory kind %d", (int)m);
    VP_REQUIRE(vp_backend_can_read(b, m), VP_ERR_DEVICE, "vp_buffer_alloc: backend %s cannot make %s memory", b->name,
               vp_mem_name(m));
    memset(out, 0, sizeof *out);
    if (bytes == 0) bytes = 1;
    b->counters.allocs++;
    VP_TRY(b->ops->buffer_alloc(b, m, bytes, out));
    out->mem = m;
    out->bytes = bytes;
    return VP_OK;
}

void vp_buffer_free(vp_backend* b, vp_buffer* buf) {
    if (!b || !buf || (!buf->dev && !buf->host)) return;
    b->ops->buffer_free(b, buf);
    memset(buf, 0, sizeof *buf);
}

/* ---- arena ---------------------------------------------------------------------- */

#define VP_ARENA_ALIGN 256u

vp_status vp_arena_init(vp_arena* a, vp_backend* b, vp_mem m, size_t bytes) {
    VP_REQUIRE(a != NULL && b != NULL, VP_ERR_INVALID_ARG, "vp_arena_init: arena or backend is NULL");
    memset(a, 0, sizeof *a);
    a->backend = b;
    VP_TRY(vp_buffer_alloc(b, m, bytes, &a->block));
    return VP_OK;
}

void vp_arena_free(vp_arena* a) {
    if (!a || !a->backend) return;
    vp_buffer_free(a->backend, &a->block);
    memset(a, 0, sizeof *a);
}

void vp_arena_reset(vp_arena* a) {
    if (a) a->used = 0;
}

vp_status vp_arena_tensor(vp_arena* a, const char* name, vp_dtype dtype, int ndim, const int64_t* shape,
                          vp_tensor* out, void** host_alias) {
    const char* nm = name ? name : "(unnamed)";
    VP_REQUIRE(a != NULL && a->block.dev != NULL, VP_ERR_INVALID_ARG, "vp_arena_tensor(%s): arena is not initialised", nm);
    VP_REQUIRE(out != NULL && shape != NULL, VP_ERR_INVALID_ARG, "vp_arena_tensor(%s): out or shape is NULL", nm);
    VP_REQUIRE(ndim >= 1 && ndim <= VP_MAX_DIMS, VP_ERR_SHAPE, "vp_arena_tensor(%s): ndim %d not in 1..%d", nm, ndim,
               VP_MAX_DIMS);
    VP_REQUIRE(vp_dtype_size(dtype) > 0, VP_ERR_INVALID_ARG, "vp_arena_tensor(%s): bad dtype %d", nm, (int)dtype);
    memset(out, 0, sizeof *out);
    size_t n = 1;
    for (int i = 0; i < ndim; ++i) {
        VP_REQUIRE(shape[i] >= 1, VP_ERR_SHAPE, "vp_arena_tensor(%s): extent %d is %lld", nm, i, (long long)shape[i]);
        out->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    size_t bytes = n * vp_dtype_size(dtype);
    size_t start = (a->used + VP_ARENA_ALIGN - 1) / VP_ARENA_ALIGN * VP_ARENA_ALIGN;
    VP_REQUIRE(start + bytes <= a->block.bytes, VP_ERR_OOM,
               "vp_arena_tensor(%s): needs %zu bytes, arena of %zu has %zu left", nm, bytes, a->block.bytes,
               a->block.bytes > start ? a->block.bytes - start : 0);
    out->data = (char*)a->block.dev + start;
    out->dtype = dtype;
    out->mem = a->block.mem;
    out->ndim = ndim;
    if (host_alias) *host_alias = a->block.host ? (char*)a->block.host + start : NULL;
    a->used = start + bytes;
    if (a->used > a->peak) a->peak = a->used;
    return VP_OK;
}

/* ---- graphs ----------------------------------------------------------------------- */

vp_status vp_graph_capture(vp_backend* b, vp_graph_body body, void* ctx, vp_graph** out) {
    VP_REQUIRE(b != NULL && body != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_graph_capture: backend, body or out is NULL");
    *out = NULL;
    vp_graph* g = (vp_graph*)calloc(1, sizeof *g);
    VP_REQUIRE(g != NULL, VP_ERR_OOM, "vp_graph_capture: out of host memory");
    g->owner = b;
    g->body = body;
    g->ctx = ctx;
    vp_status s = b->ops->graph_capture(b, g);
    if (s != VP_OK) {
        free(g);
        return s;
    }
    *out = g;
    return VP_OK;
}

vp_status vp_graph_launch(vp_backend* b, vp_graph* g) {
    VP_REQUIRE(b != NULL && g != NULL, VP_ERR_INVALID_ARG, "vp_graph_launch: backend or graph is NULL");
    VP_REQUIRE(g->owner == b, VP_ERR_INVALID_ARG, "vp_graph_launch: graph was captured on backend %s, not %s",
               g->owner->name, b->name);
    return b->ops->graph_launch(b, g);
}

void vp_graph_free(vp_graph* g) {
    if (!g) return;
    if (g->owner && g->owner->ops->graph_destroy) g->owner->ops->graph_destroy(g);
    free(g);
}

void vp_backend_counters(const vp_backend* b, vp_runtime_counters* out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (b) *out = b->counters;
}
