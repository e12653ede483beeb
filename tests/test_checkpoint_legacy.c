/* A checkpoint whose config was written before model.encoder existed (model.use_mamba: true or
 * false in its metadata) still opens: the key is read as model.encoder (true: mamba2, false:
 * none), the network is the one its tensors were saved from, and its forward runs. */
#include <sys/stat.h>

#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/api.h"
#include "vulpes/checkpoint.h"
#include "vulpes/config.h"

/* text with the first `from` replaced by `to`, in a new string (NULL when absent). */
static char* replace(const char* text, const char* from, const char* to) {
    const char* at = strstr(text, from);
    if (!at) return NULL;
    const size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char* out = (char*)malloc(n);
    if (!out) return NULL;
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Saves a tiny network of `encoder` with its config's encoder line written as `old_line`, then
 * opens it through the API: the encoder it reads, the tensors, one forward. */
static void check_old(const char* dir, const char* encoder, const char* old_line, int want) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_config cfg;
    vp_config_defaults(&cfg);
    const char* over[5] = {"model.hidden=16", "model.mamba_head_dim=8", "model.head_hidden=16", "model.iqn_cos=8",
                           NULL};
    char enc[64];
    snprintf(enc, sizeof enc, "model.encoder=%s", encoder);
    over[4] = enc;
    for (int i = 0; i < 5; ++i) CHECK_OK(vp_config_override(&cfg, over[i]));
    vp_train_parts parts;
    CHECK_OK(vp_train_parts_make(&cfg, VP_FEATURES_DEFAULT, &parts));
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &parts.learner.model, 8));
    char* yaml = NULL;
    CHECK_OK(vp_config_to_yaml(&cfg, &yaml));
    char line[64];
    snprintf(line, sizeof line, "  encoder: %s\n", encoder);
    char* old = yaml ? replace(yaml, line, old_line) : NULL;
    CHECK(old != NULL, "the config YAML has no line '%s'", line);
    char path[600];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, encoder);
    vp_ckpt_item* items = (vp_ckpt_item*)calloc((size_t)m.n_params, sizeof *items);
    for (int i = 0; items && i < m.n_params; ++i)
        items[i] = (vp_ckpt_item){m.info[i].name, vp_model_param_view(&m, &m.params, &m.info[i])};
    vp_ckpt_meta meta[2] = {{"format", "vulpes"}, {"config", old ? old : ""}};
    CHECK_OK(vp_checkpoint_save(b, path, items, m.n_params, meta, 2));
    // open it: the encoder read from the old key, the same tensors, a forward
    vp_api_model* am = NULL;
    CHECK(vp_api_model_open(path, &am) == VP_OK, "opening %s: %s", path, vp_last_error());
    if (am) {
        double v = -1;
        CHECK_OK(vp_api_model_cfg(am, "encoder", &v));
        CHECK((int)v == want, "%s: encoder %g read from '%s', expected %d", encoder, v, old_line, want);
        const vp_param_info* w = vp_model_find_param(&m, "trunk.w2");
        float* got = (float*)malloc(sizeof(float) * (size_t)w->numel);
        CHECK_OK(vp_api_model_param(am, "trunk.w2", got, w->numel));
        CHECK(memcmp(got, (const float*)m.params.data + w->offset, sizeof(float) * (size_t)w->numel) == 0,
              "%s: trunk.w2 differs from the saved tensor", encoder);
        free(got);
        CHECK(vp_api_model_cfg(am, "use_mamba", &v) != VP_OK, "the API still answers use_mamba");
    }
    vp_api_model_close(am);
    free(items);
    free(old);
    free(yaml);
    vp_model_free(&m);
    vp_backend_free(b);
}

static void test_old_checkpoints(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "ck-legacy");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    check_old(dir, "none", "  use_mamba: false\n", VP_ENCODER_NONE);
    check_old(dir, "mamba2", "  use_mamba: true\n", VP_ENCODER_MAMBA2);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_old_checkpoints);
    return vpt_finish();
}
