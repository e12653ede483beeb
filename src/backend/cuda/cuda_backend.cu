/* The CUDA backend: creation and release (device, stream, cuBLASLt handle, workspace
 * and scratch taken once), counted memory / copy / sync wrappers, graphs by stream
 * capture, lanes (a stream, workspace and scratch of their own) ordered by events, and the
 * function table that points at the op families. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.cuh"
#include "common.cuh"
#include "elementwise.cuh"
#include "fill.cuh"
#include "gather.cuh"
#include "gemm.cuh"
#include "norm.cuh"
#include "optim.cuh"
#include "reduce.cuh"
#include "softmax.cuh"

/* vp_cuda_<op> for every op of the table: the families' launchers (declared and documented
 * in their .cuh files) and the lifecycle and memory entries below. */
VP_BACKEND_OPS_DECLARE(vp_cuda)

/* ---- counted runtime wrappers ------------------------------------------------------------ */

vp_status vp_cuda_malloc(vp_backend* b, void** p, size_t bytes, int count) {
    if (count) b->counters.allocs++;
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: cudaMalloc(%zu bytes) failed: out of device memory",
                            __func__, bytes);
    }
    VP_CUDA_CHECK(e);
    return VP_OK;
}

vp_status vp_cuda_host_alloc_mapped(vp_backend* b, void** host, void** dev, size_t bytes, int count) {
    if (count) b->counters.allocs++;
    *host = NULL;
    *dev = NULL;
    VP_CUDA_CHECK(cudaHostAlloc(host, bytes, cudaHostAllocMapped));
    cudaError_t e = cudaHostGetDevicePointer(dev, *host, 0);
    if (e != cudaSuccess) {
        cudaFreeHost(*host);
        *host = NULL;
        VP_CUDA_CHECK(e);
    }
    return VP_OK;
}

vp_status vp_cuda_memcpy(vp_backend* b, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                         int count) {
    if (count) b->counters.copies++;
    vp_cuda* c = vp_cuda_of(b);
    VP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, c->stream));
    /* the sync that makes the host side valid (or reusable) is a sync of its own */
    return vp_cuda_stream_sync(b, 1);
}

vp_status vp_cuda_stream_sync(vp_backend* b, int count) {
    if (count) b->counters.syncs++;
    VP_CUDA_CHECK(cudaStreamSynchronize(vp_cuda_of(b)->stream));
    return VP_OK;
}

/* ---- table entries: lifecycle and memory ---------------------------------------------------- */

void vp_cuda_destroy(vp_backend* b) {
    vp_cuda* c = vp_cuda_of(b);
    if (c) {
        if (c->stream) cudaStreamSynchronize(c->stream);
        if (!c->parent) {
            vp_cuda_gemm_cache_free(c->gemm);
            if (c->lt) cublasLtDestroy(c->lt);
        }
        if (c->done) cudaEventDestroy(c->done);
        if (c->lt_workspace) cudaFree(c->lt_workspace);
        if (c->scratch) cudaFree(c->scratch);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
    }
    free(b);
}

vp_status vp_cuda_sync(vp_backend* b) { return vp_cuda_stream_sync(b, 0); }

void* vp_cuda_stream(vp_backend* b) { return b->impl ? (void*)vp_cuda_of(b)->stream : NULL; }

vp_status vp_cuda_buffer_alloc(vp_backend* b, vp_mem m, size_t bytes, vp_buffer* out) {
    if (m == VP_MEM_DEVICE) {
        void* p = NULL;
        VP_TRY(vp_cuda_malloc(b, &p, bytes, 0));
        /* zero-filled, ordered before every later op on the stream */
        cudaError_t e = cudaMemsetAsync(p, 0, bytes, vp_cuda_of(b)->stream);
        if (e != cudaSuccess) {
            cudaFree(p);
            VP_CUDA_CHECK(e);
        }
        out->host = NULL;
        out->dev = p;
        return VP_OK;
    }
    if (m == VP_MEM_MAPPED) {
        VP_TRY(vp_cuda_host_alloc_mapped(b, &out->host, &out->dev, bytes, 0));
        memset(out->host, 0, bytes);
        return VP_OK;
    }
    VP_FAIL(VP_ERR_DEVICE, "cuda buffer_alloc: the CUDA backend makes device or mapped memory, not %s",
            vp_mem_name(m));
}

void vp_cuda_buffer_free(vp_backend* b, vp_buffer* buf) {
    /* work still queued may use the buffer: let it finish first */
    (void)vp_cuda_stream_sync(b, 1);
    if (buf->mem == VP_MEM_MAPPED) {
        if (buf->host) cudaFreeHost(buf->host);
    } else if (buf->dev) {
        cudaFree(buf->dev);
    }
}

vp_status vp_cuda_upload(vp_backend* b, void* dst, const void* src_host, size_t bytes) {
    return vp_cuda_memcpy(b, dst, src_host, bytes, cudaMemcpyHostToDevice, 0);
}

vp_status vp_cuda_download(vp_backend* b, void* dst_host, const void* src, size_t bytes) {
    return vp_cuda_memcpy(b, dst_host, src, bytes, cudaMemcpyDeviceToHost, 0);
}

/* ---- graphs --------------------------------------------------------------------------------------- */

vp_status vp_cuda_graph_capture(vp_backend* b, vp_graph* g) {
    vp_cuda* c = vp_cuda_of(b);
    VP_CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    vp_status s = g->body(b, g->ctx);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    if (s != VP_OK) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return vp_error_context(s, "vp_graph_capture: the captured body failed");
    }
    VP_CUDA_CHECK(e);
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiate(&exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        VP_CUDA_CHECK(e);
    }
    g->graph = (void*)graph;
    g->exec = (void*)exec;
    return VP_OK;
}

vp_status vp_cuda_graph_launch(vp_backend* b, vp_graph* g) {
    VP_CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)g->exec, vp_cuda_of(b)->stream));
    return VP_OK;
}

void vp_cuda_graph_destroy(vp_graph* g) {
    if (g->exec) cudaGraphExecDestroy((cudaGraphExec_t)g->exec);
    if (g->graph) cudaGraphDestroy((cudaGraph_t)g->graph);
    g->exec = NULL;
    g->graph = NULL;
}

/* ---- lanes ------------------------------------------------------------------------------------------ */

vp_status vp_cuda_after(vp_backend* to, vp_backend* from) {
    if (to == from) return VP_OK;
    vp_cuda *t = vp_cuda_of(to), *f = vp_cuda_of(from);
    VP_CUDA_CHECK(cudaEventRecord(f->done, f->stream));
    VP_CUDA_CHECK(cudaStreamWaitEvent(t->stream, f->done, 0));
    return VP_OK;
}

static vp_status cuda_lane_setup(vp_backend* parent, vp_backend* b);

/* ---- the table ------------------------------------------------------------------------------------ */

static const vp_backend_ops CUDA_OPS = VP_BACKEND_OPS_TABLE(vp_cuda);

vp_status vp_cuda_lane(vp_backend* parent, vp_backend** out) {
    *out = NULL;
    vp_backend* b = (vp_backend*)calloc(1, sizeof *b);
    vp_cuda* c = (vp_cuda*)calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        VP_FAIL(VP_ERR_OOM, "vp_backend_lane: out of host memory");
    }
    b->kind = VP_BACKEND_CUDA;
    b->ops = &CUDA_OPS;
    b->impl = c;
    c->parent = parent;
    vp_status s = cuda_lane_setup(parent, b);
    if (s != VP_OK) {
        vp_cuda_destroy(b);
        return s;
    }
    *out = b;
    return VP_OK;
}

/* A lane's own stream, event, workspace and scratch; the device, handle and plans of the parent. */
static vp_status cuda_lane_setup(vp_backend* parent, vp_backend* b) {
    vp_cuda *p = vp_cuda_of(parent), *c = vp_cuda_of(b);
    c->device = p->device;
    c->sm_count = p->sm_count;
    c->lt = p->lt;
    c->gemm = p->gemm;
    snprintf(b->name, sizeof b->name, "%.100s (lane)", parent->name);
    VP_CUDA_CHECK(cudaSetDevice(c->device));
    VP_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    VP_CUDA_CHECK(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming));
    VP_TRY(vp_cuda_malloc(b, &c->lt_workspace, VP_CUDA_LT_WORKSPACE_BYTES, 1));
    VP_TRY(vp_cuda_malloc(b, (void**)&c->scratch, VP_CUDA_SCRATCH_FLOATS * sizeof(float), 1));
    return VP_OK;
}

/* Takes the device, stream, handle, workspace and scratch; `b` is freed by the caller on
 * failure (vp_cuda_destroy copes with a half-made state). */
static vp_status cuda_setup(vp_backend* b, int device) {
    vp_cuda* c = vp_cuda_of(b);
    /* a machine without a GPU or driver is "unsupported", not a CUDA failure */
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        VP_FAIL(VP_ERR_UNSUPPORTED, "vp_cuda_backend_create: no usable CUDA GPU on this machine (%s)",
                e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
    }
    VP_REQUIRE(device < count, VP_ERR_UNSUPPORTED,
               "vp_cuda_backend_create: device %d requested, this machine has %d CUDA device(s)", device, count);
    c->device = device;
    VP_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop;
    VP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    VP_REQUIRE(prop.canMapHostMemory, VP_ERR_UNSUPPORTED, "vp_cuda_backend_create: %s cannot map host memory",
               prop.name);
    c->sm_count = prop.multiProcessorCount;
    snprintf(b->name, sizeof b->name, "cuda:%d %.100s", device, prop.name);

    /* one non-blocking stream; every op and copy of this backend goes through it (its lanes,
     * vp_backend_lane, have their own) */
    VP_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    VP_CUDA_CHECK(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming));
    VP_CUBLAS_CHECK(cublasLtCreate(&c->lt));
    VP_TRY(vp_cuda_malloc(b, &c->lt_workspace, VP_CUDA_LT_WORKSPACE_BYTES, 1));
    VP_TRY(vp_cuda_malloc(b, (void**)&c->scratch, VP_CUDA_SCRATCH_FLOATS * sizeof(float), 1));
    VP_TRY(vp_cuda_gemm_cache_create(&c->gemm));
    return VP_OK;
}

extern "C" void* vp_cuda_backend_stream(vp_backend* b) {
    return (b && b->kind == VP_BACKEND_CUDA) ? vp_cuda_stream(b) : NULL;
}

extern "C" vp_status vp_cuda_backend_create(vp_backend** out, int device) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_cuda_backend_create: out is NULL");
    *out = NULL;
    vp_backend* b = (vp_backend*)calloc(1, sizeof *b);
    vp_cuda* c = (vp_cuda*)calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        VP_FAIL(VP_ERR_OOM, "vp_cuda_backend_create: out of host memory");
    }
    b->kind = VP_BACKEND_CUDA;
    b->ops = &CUDA_OPS;
    b->impl = c;
    snprintf(b->name, sizeof b->name, "cuda:%d", device);
    vp_status s = cuda_setup(b, device);
    if (s != VP_OK) {
        vp_cuda_destroy(b);
        return s;
    }
    *out = b;
    return VP_OK;
}
