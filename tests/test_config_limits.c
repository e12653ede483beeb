/* Tests of the configuration loader's limits on hostile input: anchors and aliases, deep
 * nesting (refused fast), the size of a document, integers past what a key holds, scalar
 * syntax and tags, and text that is not UTF-8 — from a file, from a string, from the
 * command line and from a checkpoint's metadata (backtest and resume). Every refusal names
 * the source, the line (and column) or the key, and leaves the configuration unchanged. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "test_train_util.h"
#include "test_config_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"
#include "vulpes/config.h"
#include "vulpes/dqn.h"


/* Applies override `a` to the defaults; checks the status and message, and that nothing changed. */
static void expect_override_error(const char* a, const char* needle) {
    vp_config c, def;
    vp_config_defaults(&c);
    vp_config_defaults(&def);
    CHECK_STATUS(vp_config_override(&c, a), VP_ERR_INVALID_ARG, needle);
    CHECK(vp_config_diff(&c, &def) == NULL, "a refused override (%s) changed the config", a);
}

/* `depth` nested flow mappings "{a: {a: ... 1 ...}}" under key `a` (malloc'd). */
static char* deep_flow(int depth) {
    char* s = (char*)malloc((size_t)depth * 5 + 16);
    if (!s) return NULL;
    size_t n = 0;
    for (int i = 0; i < depth; ++i) n += (size_t)sprintf(s + n, "a: {");
    n += (size_t)sprintf(s + n, "b: 1");
    for (int i = 0; i < depth; ++i) s[n++] = '}';
    s[n++] = '\n';
    s[n] = '\0';
    return s;
}

static void test_aliases_and_anchors(void) {
    // the finding's alias loop, from its file
    vp_config c, def;
    vp_config_defaults(&c);
    vp_config_defaults(&def);
    CHECK_STATUS(vp_config_load_file(&c, "tests/data/yaml_recursive_alias.yaml"), VP_ERR_PARSE,
                 "tests/data/yaml_recursive_alias.yaml:1:4: YAML anchors and aliases are not supported");
    CHECK(vp_config_diff(&c, &def) == NULL, "a refused file changed the config");
    // an anchor on a value, an alias of it, an alias of nothing, an anchored section
    expect_error("learn:\n  lr: &x 0.1\n", VP_ERR_PARSE, "bad.yaml:2:7: YAML anchors and aliases are not supported (anchor '&x')");
    expect_error("learn:\n  lr: 0.1\nmodel:\n  v_max: *x\n", VP_ERR_PARSE,
                 "bad.yaml:4:10: YAML anchors and aliases are not supported (alias '*x')");
    expect_error("learn: &s {lr: 0.1}\n", VP_ERR_PARSE, "bad.yaml:1:8: YAML anchors and aliases");
    expect_error("<<: *base\n", VP_ERR_PARSE, "YAML anchors and aliases are not supported");
}

static void test_depth(void) {
    // the finding's 7,000-deep flow mapping, from its file
    vp_config c;
    vp_config_defaults(&c);
    CHECK_STATUS(vp_config_load_file(&c, "tests/data/yaml_deep_flow_7000.yaml"), VP_ERR_PARSE,
                 "tests/data/yaml_deep_flow_7000.yaml:1:");
    CHECK_STATUS(vp_config_load_file(&c, "tests/data/yaml_deep_flow_7000.yaml"), VP_ERR_PARSE,
                 "nested deeper than");
    // 100,000 levels: refused within a small fraction of a second (it took 48 s, then crashed)
    char* deep = deep_flow(100000);
    clock_t t0 = clock();
    expect_error(deep ? deep : "", VP_ERR_PARSE, "bad.yaml:1:");
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(secs < 0.5, "refusing a 100k-deep mapping took %.3f s of CPU", secs);
    free(deep);
    // deep lists and deep block mappings too
    char list[4096];
    memset(list, '[', 3000);
    list[3000] = '\0';
    expect_error(list, VP_ERR_PARSE, "nested deeper than");
    char block[8192];
    size_t n = 0;
    for (int i = 0; i < 40; ++i) n += (size_t)snprintf(block + n, sizeof block - n, "%*sa:\n", 2 * i, "");
    snprintf(block + n, sizeof block - n, "%*s1\n", 80, "");
    expect_error(block, VP_ERR_PARSE, "nested deeper than");
    // the deepest the table needs, and a value that is a mapping one level further, still load / say what is wrong
    expect_error("learn:\n  lr:\n    x: {y: 1}\n", VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got a mapping");
    expect_error("lern:\n  lr:\n    x: 1\n", VP_ERR_INVALID_ARG, "bad.yaml:3: unknown key 'lern.lr.x'");
}

static void test_size(void) {
    // a document over the limit: refused before parsing, from a string and from a file
    size_t big = (size_t)VP_CONFIG_MAX_BYTES + 1;
    char* text = (char*)malloc(big + 1);
    if (!text) return;
    memset(text, '#', big);
    for (size_t i = 79; i < big; i += 80) text[i] = '\n';
    text[big] = '\0';
    expect_error(text, VP_ERR_INVALID_ARG, "bad.yaml: larger than 1048576 bytes");
    char dir[] = "/tmp/vp_test_config_limits_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    FILE* f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (f) {
        fwrite(text, 1, big, f);
        fclose(f);
        vp_config c;
        vp_config_defaults(&c);
        char needle[400];
        snprintf(needle, sizeof needle, "%s: larger than 1048576 bytes", path);
        CHECK_STATUS(vp_config_load_file(&c, path), VP_ERR_INVALID_ARG, needle);
    }
    // exactly at the limit it loads (all comments)
    text[big - 1] = '\0';
    vp_config c;
    vp_config_defaults(&c);
    CHECK_OK(vp_config_load_string(&c, text, "max.yaml"));
    // a folder is not a config file
    CHECK_STATUS(vp_config_load_file(&c, dir), VP_ERR_IO, "cannot read config file");
    remove(path);
    rmdir(dir);
    free(text);
}

static void test_integer_ranges(void) {
    // past what a count holds: the key and its range, never a wrapped value
    expect_override_error("features.window=4294967297",
                          "command line: features.window: expected an integer in [2, 1000000000], got '4294967297'");
    expect_override_error("features.window=9223372036854775807",
                          "command line: features.window: expected an integer in [2, 1000000000], got '9223372036854775807'");
    expect_override_error("features.window=99999999999999999999999999", "features.window: expected an integer in [2, 1000000000]");
    expect_override_error("split.embargo=9223372036854775807",
                          "command line: split.embargo: expected an integer in [0, 1000000000], got '9223372036854775807'");
    expect_override_error("train.iterations=1e10", "train.iterations: expected an integer in [1, 1000000000], got '1e10'");
    expect_override_error("walkforward.train_bars=1000000001", "walkforward.train_bars: expected an integer in [0, 1000000000]");
    expect_error("features:\n  window: 4294967297\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:2: features.window: expected an integer in [2, 1000000000], got '4294967297'");
    // the largest value loads; the seed takes any int64 >= 0
    vp_config c;
    vp_config_defaults(&c);
    CHECK_OK(vp_config_override(&c, "features.window=1000000000"));
    CHECK(c.features.window == 1000000000, "window %lld", (long long)c.features.window);
    CHECK_OK(vp_config_override(&c, "run.seed=9223372036854775807"));
    CHECK(c.run.seed == INT64_MAX, "seed %lld", (long long)c.run.seed);
    expect_override_error("run.seed=9223372036854775808", "run.seed: expected an integer in [0, 9223372036854775807]");
    // a table range is still said as before
    expect_override_error("learn.batch=0", "learn.batch: expected an integer >= 1, got '0'");
}

static void test_scalar_forms(void) {
    // an integer is decimal: no hex, octal or binary, no leading zeros (YAML 1.1 reads 010 as 8)
    expect_override_error("features.window=0x10", "features.window: expected an integer >= 2, got '0x10'");
    expect_override_error("features.window=0o10", "features.window: expected an integer >= 2, got '0o10'");
    expect_override_error("features.window=0b10", "features.window: expected an integer >= 2, got '0b10'");
    expect_override_error("features.window=010", "features.window: expected an integer >= 2, got '010'");
    expect_override_error("features.window=1_", "features.window: expected an integer >= 2, got '1_'");
    expect_override_error("features.window=0x1p4", "features.window: expected an integer");
    expect_override_error("learn.lr=0x1p-4", "learn.lr: expected a number > 0, got '0x1p-4'");
    expect_override_error("learn.lr=inf", "learn.lr: expected a number > 0, got 'inf'");
    // tags: !!str makes a string, !!float is not an integer, unknown tags are refused
    expect_error("features:\n  window: !!str 256\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:2: features.window: expected an integer >= 2, got the !!str string '256'");
    expect_error("features:\n  window: !!float 256\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:2: features.window: expected an integer >= 2, got the !!float value '256'");
    expect_error("learn:\n  lr: !!str 0.1\n", VP_ERR_INVALID_ARG, "learn.lr: expected a number > 0, got the !!str string '0.1'");
    expect_error("model:\n  use_mamba: !!str yes\n", VP_ERR_INVALID_ARG, "model.use_mamba: expected true or false");
    expect_error("data:\n  path: !!int 5\n", VP_ERR_INVALID_ARG, "data.path: expected a string");
    expect_error("data:\n  path: !weird x\n", VP_ERR_INVALID_ARG, "bad.yaml:2: data.path: tag '!weird' is not supported");
    expect_error("learn: !!set {lr: 0.1}\n", VP_ERR_INVALID_ARG, "bad.yaml:1: learn: tag '!!set' is not supported");
    // matching tags are fine
    vp_config c;
    vp_config_defaults(&c);
    CHECK_OK(vp_config_load_string(&c,
                                   "features: {window: !!int 300}\nlearn: {lr: !!float 0.5}\nmodel: {use_mamba: !!bool false}\n"
                                   "data: {path: !!str 123}\nrun: {backend: !!str cpu, name: ! 7}\nsplit: !!map {embargo: 4}\n",
                                   "tags.yaml"));
    CHECK(c.features.window == 300 && c.learn.lr == 0.5 && c.model.encoder == VP_ENCODER_NONE && strcmp(c.data.path, "123") == 0 &&
              c.run.backend == VP_RUN_BACKEND_CPU && strcmp(c.run.name, "7") == 0 && c.split.embargo == 4,
          "tagged values");
    // the forms the docs promise still load
    CHECK_OK(vp_config_override(&c, "replay.capacity=1e6"));
    CHECK_OK(vp_config_override(&c, "replay.warmup=1_000"));
    CHECK_OK(vp_config_override(&c, "split.embargo=-0"));
    CHECK_OK(vp_config_override(&c, "features.window=+12"));
    CHECK(c.replay.capacity == 1000000 && c.replay.warmup == 1000 && c.split.embargo == 0 && c.features.window == 12,
          "integer forms");
    // a NUL inside a quoted string would cut the value short
    expect_error("data:\n  path: \"a\\0b.csv\"\n", VP_ERR_INVALID_ARG, "bad.yaml:2: data.path: holds a NUL character");
}

static void test_utf8(void) {
    // the command line: the key and the offending byte
    expect_override_error("data.path=data/\xff.csv", "command line: data.path: not valid UTF-8 (byte 0xff at offset 5)");
    expect_override_error("run.name=caf\xc3", "command line: run.name: not valid UTF-8 (byte 0xc3 at offset 3)");
    expect_override_error("run.name=\xc0\xaf", "run.name: not valid UTF-8 (byte 0xc0 at offset 0)");
    expect_override_error("run.name=\xed\xa0\x80", "run.name: not valid UTF-8");
    expect_override_error("run.name=\xf4\x90\x80\x80", "run.name: not valid UTF-8");
    expect_override_error("run.backend=cpu\xff", "run.backend: not valid UTF-8");
    // characters a YAML file cannot carry back (C1 controls, line separators)
    expect_override_error("run.name=a\xc2\x85", "run.name: holds U+0085, a character a config file cannot hold");
    expect_override_error("run.name=\xe2\x80\xa8", "run.name: holds U+2028");
    // a file: the line, the column and the key; a bad byte in a comment names the line
    expect_error("learn:\n  lr: 0.1\ndata:\n  path: \"d/\xff.csv\"\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:4:12: data.path: not valid UTF-8 (byte 0xff)");
    expect_error("run:\n  name: caf\xe9\n", VP_ERR_INVALID_ARG, "bad.yaml:2:12: run.name: not valid UTF-8 (byte 0xe9)");
    expect_error("# caf\xe9\nlearn:\n  lr: 0.1\n", VP_ERR_PARSE, "bad.yaml:1:6: not valid UTF-8 (byte 0xe9)");
    expect_error("l\xe9" "arn:\n  lr: 0.1\n", VP_ERR_PARSE, "bad.yaml:1:2: not valid UTF-8 (byte 0xe9)");
    expect_error("\xff\xfel\0e\0", VP_ERR_PARSE, "bad.yaml:1:1: not valid UTF-8 (byte 0xff)");
    expect_error("data:\n  path: \"\\x85\"\n", VP_ERR_INVALID_ARG, "bad.yaml:2: data.path: holds U+0085");
    expect_error("learn:\n  lr: 0.1\x01\n", VP_ERR_PARSE, "bad.yaml:2:10: malformed YAML: control characters are not allowed");
    // every text that is accepted is written so that it loads back the same
    static const char* texts[] = {"caf\xc3\xa9/\xe2\x82\xac.csv", "tab\there", "quote\"back\\slash", "\x01\x1f\x7f",
                                  "\xf0\x9f\xa6\x8a", "a\xc2\xa0z", "\xef\xbf\xbd"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
        vp_config c, back;
        vp_config_defaults(&c);
        char a[600];
        snprintf(a, sizeof a, "run.name=x%sx", texts[i]);
        CHECK_OK(vp_config_override(&c, a));
        char* yaml = NULL;
        CHECK_OK(vp_config_to_yaml(&c, &yaml));
        vp_config_defaults(&back);
        CHECK_OK(vp_config_load_string(&back, yaml ? yaml : "", "round.yaml"));
        CHECK(strcmp(back.run.name, c.run.name) == 0, "run.name '%s' read back as '%s'", c.run.name, back.run.name);
        free(yaml);
    }
}

static void test_long_overrides(void) {
    // an override longer than a value holds is refused whole, never cut to fit
    char a[1400];
    int n = snprintf(a, sizeof a, "data.path=");
    memset(a + n, 'a', 600);
    a[n + 600] = '\0';
    expect_override_error(a, "command line: data.path: the value is longer than 511 bytes");
    n = snprintf(a, sizeof a, "learn.lr=0.1");
    memset(a + n, '0', 600);
    snprintf(a + n + 600, sizeof a - (size_t)n - 600, "5");
    expect_override_error(a, "command line: learn.lr: the value is longer than 511 bytes");
    memset(a, 'k', 300);
    snprintf(a + 300, sizeof a - 300, "=1");
    expect_override_error(a, "command line: unknown key 'kkk");
}

/* Writes a checkpoint holding no tensors and the metadata `kind` and `config` to `path`. */
static int write_meta_checkpoint(vp_backend* b, const char* path, const char* kind, const char* config) {
    vp_ckpt_meta meta[3] = {{"format", "vulpes"}, {"vulpes.kind", kind}, {"config", config}};
    return vp_checkpoint_save(b, path, NULL, 0, meta, 3) == VP_OK;
}

static void test_checkpoint_metadata(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    char dir[512], path[600], out[600];
    vpt_tmp_dir(dir, sizeof dir, "cfg-limits");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    snprintf(out, sizeof out, "%s/bt", dir);
    char* deep = deep_flow(7000);
    const char* bad[3] = {"a: &a\n  b: *a\n", deep ? deep : "", "features:\n  window: 4294967297\n"};
    const vp_status status[3] = {VP_ERR_PARSE, VP_ERR_PARSE, VP_ERR_INVALID_ARG};
    const char* needle[3] = {"YAML anchors and aliases are not supported", "nested deeper than",
                             "features.window: expected an integer in [2, 1000000000], got '4294967297'"};
    // backtest: the config in the metadata is refused, by name, and nothing is written
    for (int i = 0; i < 3; ++i) {
        CHECK(write_meta_checkpoint(b, path, "best", bad[i]), "checkpoint: %s", vp_last_error());
        vp_backtest_job job = {path, "synth:trend", NULL, NULL, out, 0, 1, 0, NULL, NULL, 0, NULL};
        vp_rollout_result r;
        memset(&r, 0, sizeof r);
        char od[600];
        CHECK_STATUS(vp_backtest_job_run(b, &job, &r, od, sizeof od), status[i], needle[i]);
        CHECK(strstr(vp_last_error(), "the checkpoint's config:") != NULL, "backtest message: %s", vp_last_error());
        CHECK(access(out, F_OK) != 0, "a refused backtest made %s", out);
    }
    // resume: the same configs in a resume checkpoint
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    if (vpt_train_cfg(&cfg, 0, NULL) && vp_train_data_load(&d, &cfg) == VP_OK) {
        CHECK_OK(vp_trainer_init(&t, b, &cfg, &d));
        for (int i = 0; i < 3; ++i) {
            CHECK(write_meta_checkpoint(b, path, "resume", bad[i]), "checkpoint: %s", vp_last_error());
            CHECK_STATUS(vp_trainer_load(&t, path), status[i], needle[i]);
            CHECK(strstr(vp_last_error(), path) != NULL, "resume message: %s", vp_last_error());
        }
        vp_trainer_free(&t);
        vp_train_data_free(&d);
    }
    free(deep);
    remove(path);
    rmdir(dir);
    vp_backend_free(b);
}

/* A warm-up too short to store one n-step transition is refused, naming the least warm-up. */
static void test_warmup_fills_the_replay(void) {
    vp_config c;
    char* over[] = {"env.n_envs=32", "learn.n_step=3", "replay.warmup=64"};
    CHECK_STATUS(vp_config_resolve(&c, NULL, 3, over), VP_ERR_INVALID_ARG,
                 "replay.warmup (64) is 2 warm-up step(s) of 32 envs, fewer than learn.n_step (3)");
    CHECK_STATUS(vp_config_resolve(&c, NULL, 3, over), VP_ERR_INVALID_ARG, "use replay.warmup >= 65");
    char* ok[] = {"env.n_envs=32", "learn.n_step=3", "replay.warmup=65"};
    CHECK_OK(vp_config_resolve(&c, NULL, 3, ok));
}

int main(void) {
    RUN_TEST(test_aliases_and_anchors);
    RUN_TEST(test_depth);
    RUN_TEST(test_size);
    RUN_TEST(test_integer_ranges);
    RUN_TEST(test_scalar_forms);
    RUN_TEST(test_utf8);
    RUN_TEST(test_long_overrides);
    RUN_TEST(test_checkpoint_metadata);
    RUN_TEST(test_warmup_fills_the_replay);
    return vpt_finish();
}
