/* Tests of the configuration: the key table, defaults, printing and loading back,
 * overrides, the rules across keys, docs/config.md and the shipped examples. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <stdio.h>

#include "vp_test.h"
#include "vulpes/config.h"

/* The text vp_config_print writes for `cfg` in `style` (malloc'd). */
static char* print_to_string(const vp_config* cfg, vp_config_style style) {
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    if (!f) return NULL;
    vp_status s = vp_config_print(cfg, style, f);
    fclose(f);
    if (s != VP_OK) {
        free(text);
        return NULL;
    }
    return text;
}

static void test_table_is_complete(void) {
    int n = vp_config_key_count();
    CHECK(n >= 60, "only %d keys", n);
    CHECK(vp_config_key_at(-1) == NULL && vp_config_key_at(n) == NULL, "out-of-range index gives NULL");
    vp_config cfg;
    vp_config_defaults(&cfg);
    for (int i = 0; i < n; ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        // a dotted name, a doc, a default inside its own range
        CHECK(strchr(k->name, '.') && k->doc && strlen(k->doc) > 8, "key %s lacks a section or a doc", k->name);
        CHECK(vp_config_find_key(k->name) == k, "%s is not unique", k->name);
        CHECK(vp_config_nearest_key(k->name) == k, "%s is not its own nearest key", k->name);
        char val[VP_CONFIG_STR_MAX], src[64];
        vp_config_format_value(&cfg, k, val, sizeof val);
        vp_config probe = cfg;
        snprintf(src, sizeof src, "default of %s", k->name);
        CHECK_OK(vp_config_set(&probe, k->name, val, src));
        CHECK(vp_config_diff(&probe, &cfg) == NULL, "default of %s (%s) does not read back", k->name, val);
        if (k->kind == VP_CONFIG_ENUM) CHECK(*(const int*)((const char*)&cfg + k->offset) >= 0, "enum %s default", k->name);
    }
    // every key the training loop needs is in the table
    const char* needed[] = {"data.path", "data.skip_bad_rows", "split.embargo", "features.window",
                            "instrument.slippage_ticks", "env.turnover_penalty", "model.iqn_target_taus",
                            "learn.clip_norm", "learn.tau", "replay.beta_steps", "collect.epsilon_steps",
                            "train.train_steps", "train.checkpoint_every", "run.precision", "run.out"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; ++i)
        CHECK(vp_config_find_key(needed[i]) != NULL, "missing key %s", needed[i]);
    CHECK(vp_config_find_key("learn") == NULL && vp_config_find_key("learn.") == NULL, "sections are not keys");
}

static void test_defaults_follow_spec(void) {
    vp_config c;
    vp_config_defaults(&c);
    CHECK(c.model.window == 8 && c.model.hidden == 256 && c.model.mamba_state == 16, "trunk dims");
    CHECK(c.model.mamba_head_dim == 64 && c.model.mamba_conv == 4 && c.model.head_hidden == 128, "mamba/head dims");
    CHECK(c.model.n_atoms == 51 && c.model.v_min == -10.0 && c.model.v_max == 10.0, "C51 support");
    CHECK(c.model.iqn_taus == 64 && c.model.iqn_target_taus == 64 && c.model.iqn_cos == 64, "IQN sizes");
    CHECK(c.model.encoder == VP_ENCODER_MAMBA2, "mamba2 encoder");
    CHECK(c.learn.batch == 8192 && c.learn.n_step == 3 && c.learn.gamma == 0.99, "batch, n-step, gamma");
    CHECK(c.learn.lr == 1e-4 && c.learn.beta1 == 0.9 && c.learn.beta2 == 0.999 && c.learn.eps == 1.5e-4, "AdamW");
    CHECK(c.learn.weight_decay == 0.0 && c.learn.clip_norm == 10.0 && c.learn.tau == 0.005, "decay, clip, tau");
    CHECK(c.replay.alpha == 0.6 && c.replay.beta0 == 0.4 && c.replay.prioritized == true, "PER");
    CHECK(c.run.backend == VP_RUN_BACKEND_AUTO && c.run.precision == VP_RUN_PRECISION_TF32, "run enums");
    CHECK(strcmp(c.data.path, "") == 0 && c.data.skip_bad_rows == false, "data");
    // the enums' C values name the table's values in order
    char v[16];
    const vp_config_key* be = vp_config_find_key("run.backend");
    const vp_config_key* pr = vp_config_find_key("run.precision");
    CHECK(strcmp(vp_config_enum_name(be, VP_RUN_BACKEND_CUDA, v, sizeof v), "cuda") == 0, "backend cuda is %s", v);
    CHECK(strcmp(vp_config_enum_name(be, VP_RUN_BACKEND_COUNT, v, sizeof v), "") == 0, "backend count is %s", v);
    CHECK(strcmp(vp_config_enum_name(pr, VP_RUN_PRECISION_BF16, v, sizeof v), "bf16") == 0, "precision bf16 is %s", v);
    CHECK(strcmp(vp_config_enum_name(pr, VP_RUN_PRECISION_COUNT, v, sizeof v), "") == 0, "precision count is %s", v);
    CHECK_OK(vp_config_check(&c));
}

/* A configuration with every key moved off its default (strings with YAML-hostile text). */
static void perturb_all(vp_config* c) {
    for (int i = 0; i < vp_config_key_count(); ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        void* f = (char*)c + k->offset;
        switch (k->kind) {
        case VP_CONFIG_INT: *(int64_t*)f = isinf(k->hi) ? *(int64_t*)f + 7 + i : (int64_t)k->hi; break;
        case VP_CONFIG_FLOAT:
            // a third of the range (not exact in binary), or a value far up the open end
            *(double*)f = isinf(k->hi) ? (isinf(k->lo) ? -1.0 / 3.0 : k->lo + 1e-7 * (i + 1)) : k->lo + (k->hi - k->lo) / 3.0;
            break;
        case VP_CONFIG_BOOL: *(bool*)f = !*(bool*)f; break;
        case VP_CONFIG_STRING: snprintf((char*)f, VP_CONFIG_STR_MAX, "a \"q\" \\ b: #c\t%d 'x' é", i); break;
        case VP_CONFIG_ENUM: *(int*)f = (*(int*)f + 1) % 3; break;
        default: break;
        }
    }
}

static void test_print_load_round_trip(void) {
    vp_config def, back;
    vp_config_defaults(&def);
    // the documented defaults load back unchanged
    char* docs = print_to_string(&def, VP_CONFIG_STYLE_DOCS);
    CHECK(docs && strstr(docs, "# AdamW learning rate -- a number > 0\n  lr: 0.0001\n"), "docs text:\n%s", docs);
    memset(&back, 0x5a, sizeof back);
    vp_config_defaults(&back);
    back.learn.lr = 0.5;  // proves the file sets it
    back.model.hidden = 3;
    CHECK_OK(vp_config_load_string(&back, docs ? docs : "", "defaults.yaml"));
    const vp_config_key* d = vp_config_diff(&def, &back);
    CHECK(d == NULL, "defaults differ after print/load at %s", d ? d->name : "-");
    free(docs);
    // every key off its default, plain style
    vp_config odd = def;
    perturb_all(&odd);
    char* yaml = NULL;
    CHECK_OK(vp_config_to_yaml(&odd, &yaml));
    vp_config_defaults(&back);
    CHECK_OK(vp_config_load_string(&back, yaml ? yaml : "", "odd.yaml"));
    d = vp_config_diff(&odd, &back);
    char a[VP_CONFIG_STR_MAX], b[VP_CONFIG_STR_MAX];
    CHECK(d == NULL, "perturbed config differs at %s: %s vs %s", d ? d->name : "-",
          d ? vp_config_format_value(&odd, d, a, sizeof a) : "", d ? vp_config_format_value(&back, d, b, sizeof b) : "");
    CHECK(vp_config_diff(&odd, &def) == vp_config_key_at(0), "diff names the first differing key");
    free(yaml);
}

static void test_format_double(void) {
    char buf[64];
    const vp_config_key* lr = vp_config_find_key("learn.lr");
    vp_config c;
    vp_config_defaults(&c);
    const double vals[] = {1e-4, 1.5e-4, 1e-7, 10.0, 1.0 / 3.0, 0.1, 100000.0, 2.5e30, DBL_MIN, 123456789.125};
    const char* want[] = {"0.0001", "0.00015", "1.0e-07", "10.0", NULL, "0.1", "100000.0", "2.5e+30", NULL, NULL};
    for (int i = 0; i < 10; ++i) {
        c.learn.lr = vals[i];
        vp_config_format_value(&c, lr, buf, sizeof buf);
        if (want[i]) CHECK(strcmp(buf, want[i]) == 0, "%.17g printed as %s, expected %s", vals[i], buf, want[i]);
        CHECK(strtod(buf, NULL) == vals[i], "%.17g printed as %s does not read back", vals[i], buf);
        CHECK(strchr(buf, '.') != NULL, "%s has no '.' (YAML 1.1 float)", buf);
    }
}

static void test_overrides(void) {
    vp_config c;
    vp_config_defaults(&c);
    CHECK_OK(vp_config_override(&c, "learn.lr=3e-4"));
    CHECK(c.learn.lr == 3e-4, "lr %g", c.learn.lr);
    CHECK_OK(vp_config_override(&c, "  model.hidden = 128 "));
    CHECK(c.model.hidden == 128, "hidden %lld", (long long)c.model.hidden);
    CHECK_OK(vp_config_override(&c, "replay.capacity=1e6"));
    CHECK(c.replay.capacity == 1000000, "capacity %lld", (long long)c.replay.capacity);
    CHECK_OK(vp_config_override(&c, "replay.warmup=1_000"));
    CHECK(c.replay.warmup == 1000, "warmup %lld", (long long)c.replay.warmup);
    CHECK_OK(vp_config_override(&c, "data.path=dir/a=b.csv"));
    CHECK(strcmp(c.data.path, "dir/a=b.csv") == 0, "path %s", c.data.path);
    CHECK_OK(vp_config_override(&c, "run.backend=cpu"));
    CHECK(c.run.backend == VP_RUN_BACKEND_CPU, "backend %d", c.run.backend);
    CHECK_OK(vp_config_override(&c, "model.encoder=tlob"));
    CHECK(c.model.encoder == VP_ENCODER_TLOB, "encoder %d", (int)c.model.encoder);
    CHECK_STATUS(vp_config_override(&c, "model.encoder=transformer"), VP_ERR_INVALID_ARG, "model.encoder");
    // the key model.encoder replaced, still read (deprecated): true -> mamba2, false -> none
    CHECK_OK(vp_config_override(&c, "model.use_mamba=no"));
    CHECK(c.model.encoder == VP_ENCODER_NONE, "use_mamba=no: encoder %d", (int)c.model.encoder);
    CHECK_OK(vp_config_override(&c, "model.use_mamba=On"));
    CHECK(c.model.encoder == VP_ENCODER_MAMBA2, "use_mamba=On: encoder %d", (int)c.model.encoder);
    CHECK_STATUS(vp_config_override(&c, "model.use_mamba=tlob"), VP_ERR_INVALID_ARG,
                 "model.use_mamba: expected true or false, got 'tlob' (deprecated: write model.encoder)");
    // errors name the command line and the key
    CHECK_STATUS(vp_config_override(&c, "learn.bach=3"), VP_ERR_INVALID_ARG,
                 "command line: unknown key 'learn.bach' (did you mean 'learn.batch'?)");
    CHECK_STATUS(vp_config_override(&c, "learn.batch=-1"), VP_ERR_INVALID_ARG,
                 "command line: learn.batch: expected an integer >= 1, got '-1'");
    CHECK_STATUS(vp_config_override(&c, "learn.batch=2.5"), VP_ERR_INVALID_ARG, "learn.batch: expected an integer");
    CHECK_STATUS(vp_config_override(&c, "learn.batch=99999999999999999999"), VP_ERR_INVALID_ARG, "got '9999");
    CHECK_STATUS(vp_config_override(&c, "learn.gamma=1.5"), VP_ERR_INVALID_ARG,
                 "command line: learn.gamma: expected a number in [0, 1], got '1.5'");
    CHECK_STATUS(vp_config_override(&c, "learn.tau=0"), VP_ERR_INVALID_ARG, "expected a number in (0, 1]");
    CHECK_STATUS(vp_config_override(&c, "learn.lr=nan"), VP_ERR_INVALID_ARG, "learn.lr: expected a number > 0");
    CHECK_STATUS(vp_config_override(&c, "learn.lr=.inf"), VP_ERR_INVALID_ARG, "learn.lr: expected a number > 0");
    CHECK_STATUS(vp_config_override(&c, "run.precision=fp16"), VP_ERR_INVALID_ARG,
                 "run.precision: expected one of fp32, tf32, bf16, got 'fp16'");
    CHECK_STATUS(vp_config_override(&c, "lr"), VP_ERR_INVALID_ARG, "'lr' is not a key=value override");
    CHECK_STATUS(vp_config_override(&c, "=3"), VP_ERR_INVALID_ARG, "no key before '='");
    CHECK_STATUS(vp_config_override(&c, "learn=3"), VP_ERR_INVALID_ARG, "'learn' is a section");
    CHECK(c.learn.batch == 8192 && c.learn.lr == 3e-4, "failed overrides changed nothing");
}

static void test_nearest_key(void) {
    const char* cases[][2] = {{"learn.bach", "learn.batch"}, {"lr", "learn.lr"},      {"model.lr", "learn.lr"},
                              {"hiden", "model.hidden"},     {"env.n_env", "env.n_envs"}, {"lern.lr", "learn.lr"},
                              {"run.sed", "run.seed"},       {"replay.alpah", "replay.alpha"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const char* got = vp_config_nearest_key(cases[i][0])->name;
        CHECK(strcmp(got, cases[i][1]) == 0, "nearest to %s is %s, expected %s", cases[i][0], got, cases[i][1]);
    }
}

static void test_cross_key_rules(void) {
    vp_config c;
    vp_config_defaults(&c);
    c.split.train = 0.8;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "split.train + split.val + split.test");
    vp_config_defaults(&c);
    c.model.v_min = 10.0;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "model.v_min (10) must be below model.v_max (10)");
    vp_config_defaults(&c);
    c.model.hidden = 100;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "model.hidden (100) is not a multiple of model.mamba_head_dim");
    c.model.encoder = VP_ENCODER_NONE;
    CHECK_OK(vp_config_check(&c));
    vp_config_defaults(&c);
    c.collect.epsilon_end = 0.5;
    c.collect.epsilon_start = 0.2;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "collect.epsilon_end");
    vp_config_defaults(&c);
    c.replay.capacity = 1000;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "learn.batch (8192) is larger than replay.capacity (1000)");
    vp_config_defaults(&c);
    c.run.precision = VP_RUN_PRECISION_BF16;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_UNSUPPORTED, "run.precision: bf16 is not available yet");
    vp_config_defaults(&c);
    c.replay.warmup = c.replay.capacity + 1;
    CHECK_STATUS(vp_config_check(&c), VP_ERR_INVALID_ARG, "replay.warmup");
    // resolve applies overrides after the defaults and runs the check
    char* over[] = {"split.train=0.9"};
    CHECK_STATUS(vp_config_resolve(&c, NULL, 1, over), VP_ERR_INVALID_ARG, "defaults with overrides: split.train");
    char* ok[] = {"split.train=0.6", "learn.batch=512"};
    CHECK_OK(vp_config_resolve(&c, NULL, 2, ok));
    CHECK(c.split.train == 0.6 && c.learn.batch == 512 && c.learn.lr == 1e-4, "resolved values");
}

static void test_examples_and_docs(void) {
    // the shipped examples load, pass the checks and say what their comments say
    vp_config cpu, gpu, def;
    vp_config_defaults(&def);
    CHECK_OK(vp_config_resolve(&cpu, "examples/eurusd.yaml", 0, NULL));
    CHECK(cpu.model.hidden == 64 && cpu.learn.batch == 256, "CPU example: hidden %lld batch %lld",
          (long long)cpu.model.hidden, (long long)cpu.learn.batch);
    CHECK(strcmp(cpu.data.path, "examples/data/eurusd_1h_2017.csv") == 0, "CPU example data %s", cpu.data.path);
    char* over[] = {"train.iterations=10"};
    CHECK_OK(vp_config_resolve(&gpu, "examples/eurusd_gpu.yaml", 1, over));
    CHECK(gpu.train.iterations == 10, "override after the file");
    CHECK(memcmp(&gpu.model, &def.model, sizeof def.model) == 0 && gpu.learn.batch == def.learn.batch,
          "GPU example uses the default model");
    CHECK(strcmp(gpu.data.path, cpu.data.path) == 0 && gpu.run.backend == VP_RUN_BACKEND_CUDA, "GPU example");
    // docs/config.md ends with the generated tables, unchanged
    FILE* f = fopen("docs/config.md", "rb");
    CHECK(f != NULL, "docs/config.md missing (tests run from the repository root)");
    if (!f) return;
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    const char* marker = "<!-- generated by `vulpes config --defaults --markdown`: do not edit below -->\n";
    const char* gen = strstr(doc, marker);
    CHECK(gen != NULL, "docs/config.md lacks the generated-section marker");
    char* md = print_to_string(&def, VP_CONFIG_STYLE_MARKDOWN);
    CHECK(md && gen && strcmp(gen + strlen(marker) + 1, md) == 0,
          "docs/config.md is stale: regenerate it with `vulpes config --defaults --markdown`");
    CHECK(md && strstr(md, "| `learn.lr` | float | `0.0001` | (0, inf) | AdamW learning rate |"), "markdown row");
    CHECK(md && strstr(md, "| `run.backend` | enum | `auto` | `auto`, `cpu`, `cuda` |"), "markdown enum row");
    free(md);
}

int main(void) {
    RUN_TEST(test_table_is_complete);
    RUN_TEST(test_defaults_follow_spec);
    RUN_TEST(test_print_load_round_trip);
    RUN_TEST(test_format_double);
    RUN_TEST(test_overrides);
    RUN_TEST(test_nearest_key);
    RUN_TEST(test_cross_key_rules);
    RUN_TEST(test_examples_and_docs);
    return vpt_finish();
}
