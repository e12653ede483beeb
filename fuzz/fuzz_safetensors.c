/* libFuzzer target: arbitrary bytes as a safetensors file, read through the plain reader
 * (vp_st_load, every entry's data and metadata touched) and the checkpoint reader
 * (vp_checkpoint_open, then every tensor read back into host memory on the CPU backend).
 * Seed corpus: fuzz/corpus/safetensors/. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "vulpes/checkpoint.h"
#include "vulpes/vulpes.h"

/* The library's log goes nowhere (a refused file is the expected outcome). */
static void quiet(vp_log_level level, const char* msg, void* user) {
    (void)level;
    (void)msg;
    (void)user;
}

/* Reads every tensor of an opened checkpoint into host buffers of its own shape. */
static void read_back(vp_backend* b, const vp_checkpoint* ck, const vp_st_file* f) {
    for (int i = 0; i < f->n_entries; ++i) {
        const vp_st_entry* e = &f->entries[i];
        if (e->ndim < 1 || e->bytes > ((size_t)64 << 20)) continue;
        void* buf = malloc(e->bytes ? e->bytes : 1);
        if (!buf) continue;
        vp_ckpt_item it;
        it.name = e->name;
        it.tensor = vp_tensor_1d(buf, e->dtype, VP_MEM_HOST, e->numel);
        it.tensor.ndim = e->ndim;
        for (int d = 0; d < e->ndim; ++d) it.tensor.shape[d] = e->shape[d];
        (void)vp_checkpoint_read(b, ck, &it);
        free(buf);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static vp_backend* backend = NULL;
    if (!backend) {
        vp_log_set_callback(quiet, NULL);
        if (vp_backend_cpu_init(&backend) != VP_OK) return 0;
    }
    char path[] = "/tmp/vp_fuzz_st_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    FILE* fp = fdopen(fd, "wb");
    if (!fp) {
        close(fd);
        unlink(path);
        return 0;
    }
    size_t wrote = size ? fwrite(data, 1, size, fp) : 0;
    fclose(fp);
    if (wrote != size) {
        unlink(path);
        return 0;
    }
    // The plain reader: a loaded file's every byte range and metadata string is readable.
    vp_st_file f;
    if (vp_st_load(&f, path) == VP_OK) {
        volatile unsigned sink = 0;
        for (int i = 0; i < f.n_entries; ++i) {
            const unsigned char* p = (const unsigned char*)vp_st_data(&f, &f.entries[i]);
            for (size_t k = 0; k < f.entries[i].bytes; ++k) sink += p[k];
            sink += (unsigned)strlen(f.entries[i].name);
        }
        for (int i = 0; i < f.n_meta; ++i) sink += (unsigned)(strlen(f.meta_keys[i]) + strlen(f.meta_values[i]));
        (void)sink;
        // The checkpoint reader on the same bytes.
        vp_checkpoint* ck = NULL;
        if (vp_checkpoint_open(&ck, path) == VP_OK) {
            read_back(backend, ck, &f);
            vp_checkpoint_close(ck);
        }
        vp_st_free(&f);
    } else {
        vp_checkpoint* ck = NULL;
        if (vp_checkpoint_open(&ck, path) == VP_OK) abort(); /* the checkpoint reader accepts less */
    }
    unlink(path);
    return 0;
}
