/* Tests of checkpoints: the safetensors layout checked byte by byte (8-byte little-endian
 * header size, JSON with dtype / shape / data_offsets, tensors contiguous in the order
 * given, header padded with spaces to a multiple of 8, metadata strings), the round trip,
 * strict dtype and shape checks on reading, the atomic replace (no temporary left), and
 * the names a training run's checkpoints hold. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "test_train_util.h"
#include "io/safetensors.h"
#include "vulpes/checkpoint.h"
#include "vp_test.h"
#include "vulpes/dqn.h"

/* Checks the raw bytes of a safetensors file against the items written (host tensors) and
 * the metadata pairs. */
static void check_layout(const char* path, const vp_ckpt_item* items, int n, const vp_ckpt_meta* meta, int n_meta) {
    size_t len = 0;
    unsigned char* f = (unsigned char*)vpt_read_file(path, NULL, &len);
    CHECK(f != NULL && len >= 8, "cannot read %s", path);
    if (!f || len < 8) {
        free(f);
        return;
    }
    // Header size: 8 bytes, little-endian, a multiple of 8, inside the file.
    uint64_t hs = 0;
    for (int i = 0; i < 8; ++i) hs |= (uint64_t)f[i] << (8 * i);
    CHECK(hs % 8 == 0 && 8 + hs <= len, "header size %llu (file %zu bytes)", (unsigned long long)hs, len);
    if (hs % 8 != 0 || 8 + hs > len) {
        free(f);
        return;
    }
    // JSON, then only spaces up to the header's end.
    char* hdr = (char*)calloc(hs + 1, 1);
    memcpy(hdr, f + 8, hs);
    size_t end = hs;
    while (end > 0 && hdr[end - 1] == ' ') end--;
    CHECK(end > 0 && hdr[end - 1] == '}' && hs - end < 8, "header ends with %zu spaces after '%c'", hs - end,
          end ? hdr[end - 1] : '?');
    for (size_t i = 0; i < end; ++i) CHECK(hdr[i] != '\0', "NUL inside the header at %zu", i);
    cJSON* root = cJSON_ParseWithLength(hdr, end);
    CHECK(root != NULL && cJSON_IsObject(root), "header is not a JSON object");
    // Tensors: dtype, shape, contiguous offsets in the order given, data equal.
    size_t at = 0;
    const unsigned char* data = f + 8 + hs;
    for (int i = 0; root && i < n; ++i) {
        const vp_tensor* t = &items[i].tensor;
        cJSON* e = cJSON_GetObjectItemCaseSensitive(root, items[i].name);
        cJSON* dt = e ? cJSON_GetObjectItemCaseSensitive(e, "dtype") : NULL;
        cJSON* sh = e ? cJSON_GetObjectItemCaseSensitive(e, "shape") : NULL;
        cJSON* of = e ? cJSON_GetObjectItemCaseSensitive(e, "data_offsets") : NULL;
        CHECK(cJSON_IsString(dt) && cJSON_IsArray(sh) && cJSON_IsArray(of) && cJSON_GetArraySize(of) == 2 &&
                  cJSON_GetArraySize(e) == 3,
              "entry %s lacks dtype/shape/data_offsets or has more", items[i].name);
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2) continue;
        const char* want = t->dtype == VP_F32 ? "F32" : (t->dtype == VP_I32 ? "I32" : "BF16");
        CHECK(strcmp(dt->valuestring, want) == 0, "%s dtype %s, expected %s", items[i].name, dt->valuestring, want);
        CHECK(cJSON_GetArraySize(sh) == t->ndim, "%s has %d dims", items[i].name, cJSON_GetArraySize(sh));
        for (int d = 0; d < t->ndim && d < cJSON_GetArraySize(sh); ++d)
            CHECK(cJSON_GetArrayItem(sh, d)->valuedouble == (double)t->shape[d], "%s extent %d", items[i].name, d);
        size_t b0 = (size_t)cJSON_GetArrayItem(of, 0)->valuedouble, b1 = (size_t)cJSON_GetArrayItem(of, 1)->valuedouble;
        CHECK(b0 == at && b1 == at + vp_tensor_bytes(t), "%s spans [%zu, %zu), expected [%zu, %zu)", items[i].name, b0,
              b1, at, at + vp_tensor_bytes(t));
        CHECK(8 + hs + b1 <= len && memcmp(data + b0, t->data, vp_tensor_bytes(t)) == 0, "%s data differ", items[i].name);
        at += vp_tensor_bytes(t);
    }
    CHECK(8 + hs + at == len, "file has %zu bytes, header + tensors make %zu", len, (size_t)(8 + hs + at));
    // Metadata: exactly the pairs given and the checksum, all strings; nothing else in the header.
    cJSON* m = root ? cJSON_GetObjectItemCaseSensitive(root, "__metadata__") : NULL;
    CHECK(m && cJSON_GetArraySize(m) == n_meta + 1, "metadata has %d pairs, expected %d and the checksum",
          m ? cJSON_GetArraySize(m) : -1, n_meta);
    for (int i = 0; m && i < n_meta; ++i) {
        cJSON* v = cJSON_GetObjectItemCaseSensitive(m, meta[i].key);
        CHECK(cJSON_IsString(v) && strcmp(v->valuestring, meta[i].value) == 0, "metadata %s", meta[i].key);
    }
    cJSON* sum = m ? cJSON_GetObjectItemCaseSensitive(m, "vulpes.checksum") : NULL;
    CHECK(cJSON_IsString(sum) && strncmp(sum->valuestring, "xxh64:", 6) == 0 && strlen(sum->valuestring) == 22,
          "vulpes.checksum is %s", cJSON_IsString(sum) ? sum->valuestring : "missing");
    CHECK(root && cJSON_GetArraySize(root) == n + 1, "header holds %d entries, expected %d",
          root ? cJSON_GetArraySize(root) : -1, n + 1);
    cJSON_Delete(root);
    free(hdr);
    free(f);
}

static void test_layout_and_round_trip(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    // Odd shapes, both dtypes, a name that sorts before the others.
    float w[3 * 7], bias[5];
    int32_t step[1] = {12345}, blob[9];
    for (int i = 0; i < 21; ++i) w[i] = 0.25f * (float)i - 2.0f;
    for (int i = 0; i < 5; ++i) bias[i] = -1.5f * (float)i;
    for (int i = 0; i < 9; ++i) blob[i] = (int32_t)(0x7f000000u + (uint32_t)i);
    vp_ckpt_item items[4] = {{"trunk.w1", vp_tensor_2d(w, VP_F32, VP_MEM_HOST, 3, 7)},
                             {"trunk.b1", vp_tensor_1d(bias, VP_F32, VP_MEM_HOST, 5)},
                             {"adam.step", vp_tensor_1d(step, VP_I32, VP_MEM_HOST, 1)},
                             {"a.blob", vp_tensor_3d(blob, VP_I32, VP_MEM_HOST, 3, 1, 3)}};
    vp_ckpt_meta meta[3] = {{"format", "vulpes"}, {"config", "learn:\n  lr: 0.001\n"}, {"vulpes.iteration", "17"}};
    char path[512];
    vpt_tmp_dir(path, sizeof path, "ck.safetensors");
    remove(path);
    CHECK_OK(vp_checkpoint_save(b, path, items, 4, meta, 3));
    check_layout(path, items, 4, meta, 3);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE* tf = fopen(tmp, "rb");
    CHECK(tf == NULL, "the temporary file was left behind");
    if (tf) fclose(tf);

    // Read back into zeroed buffers.
    float w2[21] = {0}, bias2[5] = {0};
    int32_t step2[1] = {0}, blob2[9] = {0};
    vp_ckpt_item back[4] = {{"trunk.w1", vp_tensor_2d(w2, VP_F32, VP_MEM_HOST, 3, 7)},
                            {"trunk.b1", vp_tensor_1d(bias2, VP_F32, VP_MEM_HOST, 5)},
                            {"adam.step", vp_tensor_1d(step2, VP_I32, VP_MEM_HOST, 1)},
                            {"a.blob", vp_tensor_3d(blob2, VP_I32, VP_MEM_HOST, 3, 1, 3)}};
    vp_checkpoint* ck = NULL;
    CHECK_OK(vp_checkpoint_open(&ck, path));
    CHECK_OK(vp_checkpoint_read_all(b, ck, back, 4));
    CHECK(memcmp(w, w2, sizeof w) == 0 && memcmp(bias, bias2, sizeof bias) == 0 && step2[0] == 12345 &&
              memcmp(blob, blob2, sizeof blob) == 0,
          "round trip changed the data");
    CHECK(ck && strcmp(vp_checkpoint_meta(ck, "vulpes.iteration"), "17") == 0 && vp_checkpoint_meta(ck, "nope") == NULL &&
              vp_checkpoint_has(ck, "trunk.b1") && !vp_checkpoint_has(ck, "trunk.b2"),
          "metadata / has");
    // Strict reading: another shape, dtype or a missing name fails, naming the tensor.
    vp_ckpt_item bad_shape = {"trunk.w1", vp_tensor_2d(w2, VP_F32, VP_MEM_HOST, 7, 3)};
    CHECK_STATUS(vp_checkpoint_read(b, ck, &bad_shape), VP_ERR_SHAPE, "trunk.w1");
    vp_ckpt_item bad_type = {"trunk.b1", vp_tensor_1d(blob2, VP_I32, VP_MEM_HOST, 5)};
    CHECK_STATUS(vp_checkpoint_read(b, ck, &bad_type), VP_ERR_PARSE, "trunk.b1");
    vp_ckpt_item missing = {"trunk.b9", vp_tensor_1d(bias2, VP_F32, VP_MEM_HOST, 5)};
    CHECK_STATUS(vp_checkpoint_read(b, ck, &missing), VP_ERR_PARSE, "trunk.b9");
    vp_checkpoint_close(ck);

    // A second save replaces the file whole.
    CHECK_OK(vp_checkpoint_save(b, path, items + 1, 1, NULL, 0));
    check_layout(path, items + 1, 1, NULL, 0);
    // Bad calls.
    vp_ckpt_item noname = {"", items[0].tensor};
    CHECK_STATUS(vp_checkpoint_save(b, path, &noname, 1, NULL, 0), VP_ERR_INVALID_ARG, "no name");
    vp_ckpt_item dup[2] = {items[0], items[0]};
    CHECK_STATUS(vp_checkpoint_save(b, path, dup, 2, NULL, 0), VP_ERR_INVALID_ARG, "trunk.w1");
    CHECK_STATUS(vp_checkpoint_open(&ck, "/nonexistent/x.safetensors"), VP_ERR_IO, "x.safetensors");
    remove(path);
    vp_backend_free(b);
}

static void test_training_checkpoints(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 0, NULL)) return;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_trainer_init(&t, b, &cfg, &d));
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK_OK(vp_trainer_iterate(&t, 3));
    char path[512];
    vpt_tmp_dir(path, sizeof path, "last.safetensors");
    CHECK_OK(vp_trainer_save(&t, path, VP_CKPT_RESUME));
    vp_checkpoint* ck = NULL;
    CHECK_OK(vp_checkpoint_open(&ck, path));
    if (ck) {
        // Every parameter by its table name, the target, both moments; counters, state, config.
        const vp_model* m = &t.learner.model;
        static const char* prefixes[4] = {"", "target.", "adam.m.", "adam.v."};
        int missing = 0;
        for (int i = 0; i < m->n_params; ++i)
            for (int p = 0; p < 4; ++p) {
                char name[128];
                snprintf(name, sizeof name, "%s%s", prefixes[p], m->info[i].name);
                missing += !vp_checkpoint_has(ck, name);
            }
        CHECK(m->n_params > 10 && missing == 0, "%d of %d parameter tensors missing", missing, 4 * m->n_params);
        CHECK(vp_checkpoint_has(ck, "adam.step") && vp_checkpoint_has(ck, "collect.step") &&
                  vp_checkpoint_has(ck, "env.state") && vp_checkpoint_has(ck, "replay.state") &&
                  vp_checkpoint_has(ck, "learner.stats"),
              "state tensors missing");
        const char* yaml = vp_checkpoint_meta(ck, "config");
        vp_config back;
        vp_config_defaults(&back);
        CHECK(yaml && vp_config_load_string(&back, yaml, "metadata") == VP_OK && vp_config_diff(&back, &cfg) == NULL,
              "config in the metadata does not give the run's config back");
        CHECK(strcmp(vp_checkpoint_meta(ck, "vulpes.iteration"), "3") == 0 &&
                  strcmp(vp_checkpoint_meta(ck, "vulpes.kind"), "resume") == 0 &&
                  strcmp(vp_checkpoint_meta(ck, "vulpes.replay"), "saved (replay.state)") == 0,
              "metadata counters");
        // A parameter's data is the model's.
        const vp_param_info* p0 = &m->info[0];
        vp_tensor v = vp_model_param_view(m, &m->params, p0);
        float* got = (float*)calloc((size_t)p0->numel, sizeof(float));
        vp_ckpt_item it = {p0->name, vp_tensor_1d(got, VP_F32, VP_MEM_HOST, p0->numel)};
        it.tensor = v;
        it.tensor.data = got;
        CHECK_OK(vp_checkpoint_read(b, ck, &it));
        CHECK(got && memcmp(got, v.data, (size_t)p0->numel * 4) == 0, "%s differs from the model's", p0->name);
        free(got);
        vp_checkpoint_close(ck);
    }
    // The best checkpoint: parameters only.
    CHECK_OK(vp_trainer_save(&t, path, VP_CKPT_BEST));
    CHECK_OK(vp_checkpoint_open(&ck, path));
    CHECK(ck && vp_checkpoint_has(ck, t.learner.model.info[0].name) && !vp_checkpoint_has(ck, "replay.state") &&
              strcmp(vp_checkpoint_meta(ck, "vulpes.kind"), "best") == 0,
          "best checkpoint content");
    vp_checkpoint_close(ck);
    CHECK_STATUS(vp_trainer_load(&t, path), VP_ERR_PARSE, "not a resume checkpoint");
    // The learner's statistics may be NaN (a skipped step) and still resume.
    float* stats = (float*)t.learner.stats.data;
    stats[VP_STAT_LOSS] = NAN;
    CHECK_OK(vp_trainer_save(&t, path, VP_CKPT_RESUME));
    CHECK_OK(vp_trainer_load(&t, path));
    // A NaN parameter is refused wherever parameters are read, naming the tensor.
    const vp_param_info* p1 = &t.learner.model.info[1];
    vp_tensor bv = vp_model_param_view(&t.learner.model, &t.best_params, p1);
    ((float*)bv.data)[0] = NAN;
    CHECK_OK(vp_trainer_save(&t, path, VP_CKPT_BEST));
    CHECK_STATUS(vp_trainer_load_params(&t, path, &t.learner.model.params), VP_ERR_NUMERIC, p1->name);
    CHECK_STATUS(vp_trainer_load_params(&t, path, &t.learner.model.params), VP_ERR_NUMERIC, "element 0 ");
    remove(path);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* Replaces the first occurrence of `from` in the file at path by `to` (same length); 1 when found. */
static int patch_file(const char* path, const char* from, const char* to) {
    size_t len = 0;
    char* f = vpt_read_file(path, NULL, &len);
    size_t k = strlen(from);
    char* at = NULL;
    for (size_t i = 0; f && i + k <= len && !at; ++i)
        if (memcmp(f + i, from, k) == 0) at = f + i;
    if (at) {
        memcpy(at, to, k);
        FILE* fp = fopen(path, "wb");
        if (fp) {
            fwrite(f, 1, len, fp);
            fclose(fp);
        }
    }
    free(f);
    return at != NULL;
}

/* Flips one bit of byte `at` (negative: from the end) of the file at path. */
static void flip_byte(const char* path, long at) {
    size_t len = 0;
    char* f = vpt_read_file(path, NULL, &len);
    if (!f || len == 0) {
        free(f);
        return;
    }
    size_t i = at < 0 ? len - (size_t)(-at) : (size_t)at;
    f[i] ^= 0x10;
    FILE* fp = fopen(path, "wb");
    if (fp) {
        fwrite(f, 1, len, fp);
        fclose(fp);
    }
    free(f);
}

/* Every checkpoint carries a checksum of its tensors and metadata; a changed byte anywhere in
 * them, a missing or malformed checksum is refused on opening, naming the file. */
static void test_checksum(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    float w[6] = {1, 2, 3, 4, 5, 6};
    int32_t step[1] = {7};
    vp_ckpt_item items[2] = {{"w", vp_tensor_2d(w, VP_F32, VP_MEM_HOST, 2, 3)},
                             {"step", vp_tensor_1d(step, VP_I32, VP_MEM_HOST, 1)}};
    vp_ckpt_meta meta[2] = {{"config", "env:\n  cost_bps: 0.75\n"}, {"vulpes.iteration", "4"}};
    char path[512];
    vpt_tmp_dir(path, sizeof path, "sum.safetensors");
    vp_checkpoint* ck = NULL;
    const char* mismatch = "checksum mismatch: the file was changed after it was written";
    // Intact: opens.
    CHECK_OK(vp_checkpoint_save(b, path, items, 2, meta, 2));
    CHECK_OK(vp_checkpoint_open(&ck, path));
    vp_checkpoint_close(ck);
    // One bit of tensor data.
    flip_byte(path, -1);
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, mismatch);
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, path);
    // A config value (the cost).
    CHECK_OK(vp_checkpoint_save(b, path, items, 2, meta, 2));
    CHECK(patch_file(path, "0.75", "0.00"), "config value not found in the file");
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, mismatch);
    // Another metadata value, and the checksum itself.
    CHECK_OK(vp_checkpoint_save(b, path, items, 2, meta, 2));
    CHECK(patch_file(path, "\"vulpes.iteration\":\"4\"", "\"vulpes.iteration\":\"5\""), "iteration not found");
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, mismatch);
    CHECK_OK(vp_checkpoint_save(b, path, items, 2, meta, 2));
    CHECK(patch_file(path, "\"vulpes.checksum\":\"xxh64:", "\"vulpes.checksum\":\"xxh65:"), "checksum not found");
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, "is not xxh64:");
    // A tensor renamed (same length).
    CHECK_OK(vp_checkpoint_save(b, path, items, 2, meta, 2));
    CHECK(patch_file(path, "\"step\":", "\"stop\":"), "tensor name not found");
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, mismatch);
    // A plain safetensors file without the checksum is not a trusted checkpoint.
    vp_st_writer sw;
    vp_st_writer_init(&sw);
    int64_t sh[2] = {2, 3};
    CHECK_OK(vp_st_writer_meta(&sw, "config", "env:\n  cost_bps: 0.75\n"));
    CHECK_OK(vp_st_writer_add(&sw, "w", VP_F32, 2, sh, w));
    CHECK_OK(vp_st_writer_save(&sw, path));
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, "has no vulpes.checksum");
    CHECK_OK(vp_st_writer_meta(&sw, "vulpes.checksum", "xxh64:0123"));
    CHECK_OK(vp_st_writer_save(&sw, path));
    CHECK_STATUS(vp_checkpoint_open(&ck, path), VP_ERR_PARSE, "'xxh64:0123' is not xxh64:");
    vp_st_writer_free(&sw);
    CHECK(ck == NULL, "a refused open gives no checkpoint");
    // The key is the writer's own.
    vp_ckpt_meta forged[1] = {{"vulpes.checksum", "xxh64:0000000000000000"}};
    CHECK_STATUS(vp_checkpoint_save(b, path, items, 2, forged, 1), VP_ERR_INVALID_ARG, "vulpes.checksum");
    remove(path);
    vp_backend_free(b);
}

/* NaN or Inf in an F32 / BF16 tensor is refused on reading, naming the tensor and the first
 * bad element, before any tensor of the list is uploaded; a tensor declared to hold
 * statistics may hold them. */
static void test_nonfinite(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    float good[3] = {1, 2, 3}, bad[6] = {0, 1, 2, 3, NAN, INFINITY}, inf[2] = {-INFINITY, 1};
    uint16_t half[2] = {0x3f80, 0x7f80};
    int32_t raw[1] = {0x7fc00000};
    vp_ckpt_item items[5] = {{"good", vp_tensor_1d(good, VP_F32, VP_MEM_HOST, 3)},
                             {"bad", vp_tensor_2d(bad, VP_F32, VP_MEM_HOST, 2, 3)},
                             {"inf", vp_tensor_1d(inf, VP_F32, VP_MEM_HOST, 2)},
                             {"half", vp_tensor_1d(half, VP_BF16, VP_MEM_HOST, 2)},
                             {"raw", vp_tensor_1d(raw, VP_I32, VP_MEM_HOST, 1)}};
    char path[512];
    vpt_tmp_dir(path, sizeof path, "nan.safetensors");
    CHECK_OK(vp_checkpoint_save(b, path, items, 5, NULL, 0));
    vp_checkpoint* ck = NULL;
    CHECK_OK(vp_checkpoint_open(&ck, path));
    if (!ck) {
        vp_backend_free(b);
        return;
    }
    float g2[3] = {0}, b2[6] = {0}, i2[2] = {0};
    uint16_t h2[2] = {0};
    int32_t r2[1] = {0};
    vp_ckpt_item back[5] = {{"good", vp_tensor_1d(g2, VP_F32, VP_MEM_HOST, 3)},
                            {"bad", vp_tensor_2d(b2, VP_F32, VP_MEM_HOST, 2, 3)},
                            {"inf", vp_tensor_1d(i2, VP_F32, VP_MEM_HOST, 2)},
                            {"half", vp_tensor_1d(h2, VP_BF16, VP_MEM_HOST, 2)},
                            {"raw", vp_tensor_1d(r2, VP_I32, VP_MEM_HOST, 1)}};
    CHECK_STATUS(vp_checkpoint_read(b, ck, &back[1]), VP_ERR_NUMERIC, "tensor 'bad' element 4 ([1, 1]) is nan");
    CHECK_STATUS(vp_checkpoint_read(b, ck, &back[1]), VP_ERR_NUMERIC, path);
    CHECK_STATUS(vp_checkpoint_read(b, ck, &back[2]), VP_ERR_NUMERIC, "tensor 'inf' element 0 ([0]) is -inf");
    CHECK_STATUS(vp_checkpoint_read(b, ck, &back[3]), VP_ERR_NUMERIC, "tensor 'half' element 1 ([1]) is inf");
    CHECK(b2[4] == 0 && i2[0] == 0 && h2[1] == 0, "a refused tensor was uploaded");
    // A list with one bad tensor uploads none of it.
    CHECK_STATUS(vp_checkpoint_read_all(b, ck, back, 5), VP_ERR_NUMERIC, "'bad'");
    CHECK(g2[0] == 0 && r2[0] == 0, "read_all uploaded tensors before refusing the list");
    // Integer words are raw state, not values; declared statistics may be NaN.
    CHECK_OK(vp_checkpoint_read(b, ck, &back[4]));
    CHECK(r2[0] == 0x7fc00000, "raw words");
    CHECK_OK(vp_checkpoint_allow_nonfinite(ck, "bad"));
    CHECK_OK(vp_checkpoint_read(b, ck, &back[1]));
    CHECK(isnan(b2[4]) && isinf(b2[5]), "statistics read back");
    CHECK_STATUS(vp_checkpoint_read(b, ck, &back[2]), VP_ERR_NUMERIC, "'inf'");
    vp_checkpoint_close(ck);
    remove(path);
    vp_backend_free(b);
}

/* A full disk: the message gives the errno, and no file or temporary is left. */
static void test_write_enospc(void) {
    FILE* full = fopen("/dev/full", "wb");
    if (!full) return;
    fclose(full);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    float w[64] = {0};
    vp_ckpt_item items[1] = {{"w", vp_tensor_1d(w, VP_F32, VP_MEM_HOST, 64)}};
    char path[512], tmp[600];
    vpt_tmp_dir(path, sizeof path, "full.safetensors");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    remove(path);
    remove(tmp);
    // PATH.tmp leads to /dev/full, where every write fails with ENOSPC.
    CHECK(symlink("/dev/full", tmp) == 0, "symlink %s", tmp);
    CHECK_STATUS(vp_checkpoint_save(b, path, items, 1, NULL, 0), VP_ERR_IO, strerror(ENOSPC));
    CHECK(access(path, F_OK) != 0 && access(tmp, F_OK) != 0, "a failed save left a file behind");
    CHECK(symlink("/dev/full", tmp) == 0, "symlink %s", tmp);
    CHECK_STATUS(vp_file_write_atomic(path, w, sizeof w), VP_ERR_IO, strerror(ENOSPC));
    CHECK(access(path, F_OK) != 0 && access(tmp, F_OK) != 0, "a failed write left a file behind");
    remove(tmp);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_layout_and_round_trip);
    RUN_TEST(test_training_checkpoints);
    RUN_TEST(test_checksum);
    RUN_TEST(test_nonfinite);
    RUN_TEST(test_write_enospc);
    return vpt_finish();
}
