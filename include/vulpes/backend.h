/* vulpes: backends (CPU reference and CUDA), memory, arenas and graphs.
 *
 * A backend owns an execution context (on CUDA: a device, a stream and a cuBLASLt
 * handle). Every op (ops.h) takes the backend first and runs on it. Memory is taken
 * once, at init, into arenas; nothing allocates inside a training step. */
#ifndef VULPES_BACKEND_H
#define VULPES_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An execution context (opaque): CPU or CUDA. */
typedef struct vp_backend vp_backend;

/* Which implementation a backend is. */
typedef enum vp_backend_kind {
    VP_BACKEND_CPU = 0, /* plain C + OpenBLAS */
    VP_BACKEND_CUDA,    /* CUDA kernels + cuBLASLt */
    VP_BACKEND_KIND_COUNT
} vp_backend_kind;

/* Creates the CPU backend into *out (freed with vp_backend_free). */
vp_status vp_backend_cpu_init(vp_backend** out);

/* Creates the CUDA backend on `device` into *out; VP_ERR_UNSUPPORTED when the build has
 * no CUDA or the machine no GPU. */
vp_status vp_backend_cuda_init(vp_backend** out, int device);

/* Creates the CUDA backend into *out when a GPU is usable, else the CPU backend. */
vp_status vp_backend_best_init(vp_backend** out);

/* Releases a backend (NULL is a no-op). Arenas made from it must be freed first. */
void vp_backend_free(vp_backend* b);

/* The kind of a backend. */
vp_backend_kind vp_backend_get_kind(const vp_backend* b);

/* A short name ("cpu", "cuda:0 NVIDIA H200"); never NULL. */
const char* vp_backend_name(const vp_backend* b);

/* Whether the backend can dereference memory of kind `m`. */
int vp_backend_can_read(const vp_backend* b, vp_mem m);

/* The memory kind the backend computes in (VP_MEM_HOST on CPU, VP_MEM_DEVICE on CUDA). */
vp_mem vp_backend_native_mem(const vp_backend* b);

/* Waits until all work issued on the backend is done (never call inside a step). */
vp_status vp_backend_sync(vp_backend* b);

/* ---- lanes: work that may run alongside ----------------------------------------------- */

/* A lane of `b` into *lane: a backend on b's device whose work may run alongside b's (on
 * CUDA its own stream, GEMM workspace and reduction scratch, with b's device, library handle
 * and GEMM plans). Work on a lane is ordered against b's work only by vp_backend_after. On
 * the CPU a lane is b itself. Made at set-up (it allocates); freed by vp_backend_lane_free
 * before b. */
vp_status vp_backend_lane(vp_backend* b, vp_backend** lane);

/* Frees a lane of b; a no-op for NULL or for a lane that is b itself. */
void vp_backend_lane_free(vp_backend* b, vp_backend* lane);

/* Orders work: what is issued to `to` after this call starts only once what was issued to
 * `from` before it is done (a CUDA event; inside a graph capture, an edge of the graph). No
 * copy, allocation or synchronisation; a no-op when to == from. A lane brought into a
 * capture this way must be joined back (vp_backend_after(b, lane)) before the capture ends. */
vp_status vp_backend_after(vp_backend* to, vp_backend* from);

/* Copies `bytes` from host memory src_host [bytes] into tensor dst of this backend
 * (set-up and tests only). */
vp_status vp_upload(vp_backend* b, vp_tensor* dst, const void* src_host, size_t bytes);

/* Copies `bytes` of tensor src of this backend into host memory dst_host [bytes] (set-up,
 * logging and tests only). */
vp_status vp_download(vp_backend* b, void* dst_host, const vp_tensor* src, size_t bytes);

/* ---- raw memory -------------------------------------------------------------- */

/* One allocation. For VP_MEM_MAPPED, `host` and `dev` are the two aliases of one pinned
 * buffer; otherwise both equal the one pointer. */
typedef struct vp_buffer {
    void* host;   /* pointer the host may dereference (NULL for device memory) */
    void* dev;    /* pointer the backend's ops dereference */
    size_t bytes; /* size */
    vp_mem mem;   /* kind */
} vp_buffer;

/* Allocates `bytes` of kind `m` (zero-filled) into *out. */
vp_status vp_buffer_alloc(vp_backend* b, vp_mem m, size_t bytes, vp_buffer* out);

/* Frees a buffer made by vp_buffer_alloc (a zeroed buffer is a no-op). */
void vp_buffer_free(vp_backend* b, vp_buffer* buf);

/* ---- arena: one block per run, bump-allocated, freed at once ----------------- */

/* A bump allocator over one block of backend memory. */
typedef struct vp_arena {
    vp_backend* backend; /* owner */
    vp_buffer block;     /* the one allocation */
    size_t used;         /* bytes handed out so far */
    size_t peak;         /* high-water mark */
} vp_arena;

/* Makes an arena of `bytes` of memory kind `m`. */
vp_status vp_arena_init(vp_arena* a, vp_backend* b, vp_mem m, size_t bytes);

/* Frees the arena's block. */
void vp_arena_free(vp_arena* a);

/* Takes a 256-byte aligned tensor of `dtype` and shape [ndim] from the arena into *out;
 * fails with VP_ERR_OOM naming `name` when the arena is full. `host_alias` (may be NULL)
 * receives the host pointer for mapped arenas. */
vp_status vp_arena_tensor(vp_arena* a, const char* name, vp_dtype dtype, int ndim,
                          const int64_t* shape, vp_tensor* out, void** host_alias);

/* Returns the arena to empty (tensors taken from it become invalid). */
void vp_arena_reset(vp_arena* a);

/* ---- graphs: a recorded sequence of ops replayed as one launch ---------------- */

/* A captured sequence of ops (opaque): a CUDA graph, or the body itself on the CPU. */
typedef struct vp_graph vp_graph;

/* Issues the ops that make up the graph; called once at capture on CUDA, at every
 * launch on the CPU. */
typedef vp_status (*vp_graph_body)(vp_backend* b, void* ctx);

/* Captures `body(b, ctx)` into a graph *out. On CUDA the body runs inside stream capture,
 * so it must issue only ops (no sync, copy or allocation); `ctx` must outlive the graph. */
vp_status vp_graph_capture(vp_backend* b, vp_graph_body body, void* ctx, vp_graph** out);

/* Replays a captured graph on the backend's stream (asynchronous on CUDA). */
vp_status vp_graph_launch(vp_backend* b, vp_graph* g);

/* Frees a graph (NULL is a no-op). */
void vp_graph_free(vp_graph* g);

/* ---- hot-path guards ---------------------------------------------------------- */

/* Counts of runtime calls that must not happen inside a step. */
typedef struct vp_runtime_counters {
    int64_t copies;  /* host<->device copies */
    int64_t allocs;  /* allocations */
    int64_t syncs;   /* synchronisations */
} vp_runtime_counters;

/* Reads the backend's counters of copies, allocations and syncs since init into *out. */
void vp_backend_counters(const vp_backend* b, vp_runtime_counters* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_BACKEND_H */
