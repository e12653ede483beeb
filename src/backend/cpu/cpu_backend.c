/* The CPU backend: its function table, host memory, transfers and graphs. Memory of
 * every kind the CPU can reach is plain host memory, aligned to 256 bytes (the arena's
 * tensor alignment, so arena tensors keep it too); a "mapped" buffer is
 * the same host memory under both aliases. A graph stores its body and runs it at each
 * launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "cpu_impl.h"

#define VP_CPU_ALIGN 256u

/* ---- lifecycle -------------------------------------------------------------------- */

void vp_cpu_destroy(vp_backend* b) { free(b); }

vp_status vp_cpu_sync(vp_backend* b) {
    (void)b;
    return VP_OK;
}

/* The CPU runs everything in the calling thread: no stream. */
void* vp_cpu_stream(vp_backend* b) {
    (void)b;
    return NULL;
}

/* ---- memory and transfers ------------------------------------------------------------ */

vp_status vp_cpu_buffer_alloc(vp_backend* b, vp_mem m, size_t bytes, vp_buffer* out) {
    VP_REQUIRE(m == VP_MEM_HOST || m == VP_MEM_MAPPED, VP_ERR_DEVICE,
               "cpu buffer_alloc: the CPU backend cannot make %s memory", vp_mem_name(m));
    /* round up to the alignment (aligned_alloc needs a multiple of it), zero-fill */
    size_t padded = (bytes + VP_CPU_ALIGN - 1) / VP_CPU_ALIGN * VP_CPU_ALIGN;
    VP_REQUIRE(padded >= bytes, VP_ERR_OOM, "cpu buffer_alloc: %zu bytes overflow", bytes);
    void* p = aligned_alloc(VP_CPU_ALIGN, padded);
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "cpu buffer_alloc: out of host memory for %zu bytes (%s)", bytes,
               vp_mem_name(m));
    memset(p, 0, padded);
    out->host = p;
    out->dev = p;
    return VP_OK;
}

void vp_cpu_buffer_free(vp_backend* b, vp_buffer* buf) {
    (void)b;
    free(buf->dev ? buf->dev : buf->host);
}

vp_status vp_cpu_upload(vp_backend* b, void* dst, const void* src_host, size_t bytes) {
    (void)b;
    if (bytes) memmove(dst, src_host, bytes);
    return VP_OK;
}

vp_status vp_cpu_download(vp_backend* b, void* dst_host, const void* src, size_t bytes) {
    (void)b;
    if (bytes) memmove(dst_host, src, bytes);
    return VP_OK;
}

/* ---- graphs: the body is kept by vp_graph_capture and run at each launch --------------- */

vp_status vp_cpu_graph_capture(vp_backend* b, vp_graph* g) {
    (void)b;
    g->exec = NULL;
    g->graph = NULL;
    return VP_OK;
}

vp_status vp_cpu_graph_launch(vp_backend* b, vp_graph* g) { return g->body(b, g->ctx); }

void vp_cpu_graph_destroy(vp_graph* g) { (void)g; }

/* ---- lanes: the CPU runs in one thread, in issue order, so a lane is the backend itself -- */

vp_status vp_cpu_lane(vp_backend* b, vp_backend** out) {
    *out = b;
    return VP_OK;
}

vp_status vp_cpu_after(vp_backend* to, vp_backend* from) {
    (void)to;
    (void)from;
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------- */

static const vp_backend_ops CPU_OPS = VP_BACKEND_OPS_TABLE(vp_cpu);

vp_status vp_cpu_backend_create(vp_backend** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_cpu_backend_create: out is NULL");
    *out = NULL;
    vp_backend* b = (vp_backend*)calloc(1, sizeof *b);
    VP_REQUIRE(b != NULL, VP_ERR_OOM, "vp_cpu_backend_create: out of host memory");
    b->kind = VP_BACKEND_CPU;
    b->ops = &CPU_OPS;
    b->impl = NULL;
    const int nt = openblas_get_num_threads();
    snprintf(b->name, sizeof b->name, "cpu (OpenBLAS, %d thread%s)", nt, nt == 1 ? "" : "s");
    *out = b;
    return VP_OK;
}
