/* Tests of bad configuration files: every message names the file, the line and the key
 * (and the nearest known key for an unknown one); a failed load changes nothing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_config_util.h"
#include "vp_test.h"
#include "vulpes/config.h"


static void test_unknown_keys(void) {
    expect_error("learn:\n  lr: 0.001\n  bach: 256\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:3: unknown key 'learn.bach' (did you mean 'learn.batch'?)");
    expect_error("model:\n  hidden: 64\nlr: 0.1\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:3: unknown key 'lr' (did you mean 'learn.lr'?)");
    expect_error("lern:\n  lr: 0.1\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: unknown key 'lern.lr' (did you mean 'learn.lr'?)");
    expect_error("lern: {}\n", VP_ERR_INVALID_ARG, "bad.yaml:1: unknown key 'lern'");
    expect_error("learn.bach: 3\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:1: unknown key 'learn.bach' (did you mean 'learn.batch'?)");
    expect_error("\n\n# comment\nenv:\n  n_env: 3\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:5: unknown key 'env.n_env' (did you mean 'env.n_envs'?)");
    expect_error("? [a, b]\n: 1\n", VP_ERR_PARSE, "bad.yaml:1: a key must be a plain name");
    // the last part weighs, and other trainers' names get ours
    expect_error("learn:\n  learning_rate: 0.1\n", VP_ERR_INVALID_ARG,
                 "unknown key 'learn.learning_rate' (did you mean 'learn.lr'?)");
    expect_error("batch_size: 32\n", VP_ERR_INVALID_ARG, "unknown key 'batch_size' (did you mean 'learn.batch'?)");
    expect_error("train:\n  epochs: 3\n", VP_ERR_INVALID_ARG,
                 "unknown key 'train.epochs' (did you mean 'train.iterations'?)");
    expect_error("gamma: 0.9\n", VP_ERR_INVALID_ARG, "unknown key 'gamma' (did you mean 'learn.gamma'?)");
    expect_error("learn:\n  max_grad_norm: 1\n", VP_ERR_INVALID_ARG, "(did you mean 'learn.clip_norm'?)");
}

static void test_wrong_types_and_ranges(void) {
    expect_error("learn:\n  batch: abc\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.batch: expected an integer >= 1, got 'abc'");
    expect_error("learn:\n  batch: -5\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.batch: expected an integer >= 1, got '-5'");
    expect_error("learn:\n  batch: 0\n", VP_ERR_INVALID_ARG, "learn.batch: expected an integer >= 1, got '0'");
    expect_error("learn:\n  batch: \"256\"\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.batch: expected an integer >= 1, got the quoted string '256'");
    expect_error("learn:\n\n  gamma: 1.01\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:3: learn.gamma: expected a number in [0, 1], got '1.01'");
    expect_error("learn:\n  lr: -0.001\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got '-0.001'");
    expect_error("learn:\n  lr: .nan\n", VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got '.nan'");
    expect_error("learn:\n  lr:\n", VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got nothing");
    expect_error("learn:\n  lr: [1, 2]\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got a list");
    expect_error("learn:\n  lr:\n    x: 1\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: learn.lr: expected a number > 0, got a mapping");
    expect_error("split:\n  embargo: -1\n", VP_ERR_INVALID_ARG, "split.embargo: expected an integer >= 0, got '-1'");
    expect_error("model:\n  window: 5000\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: model.window: expected an integer in [1, 4096], got '5000'");
    expect_error("model:\n  use_mamba: maybe\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: model.use_mamba: expected true or false, got 'maybe'");
    expect_error("run:\n  backend: gpu\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:2: run.backend: expected one of auto, cpu, cuda, got 'gpu'");
    expect_error("run:\n  backend: CPU\n",
                 VP_ERR_INVALID_ARG, "run.backend: expected one of auto, cpu, cuda, got 'CPU'");
    expect_error("learn: 5\n", VP_ERR_INVALID_ARG, "bad.yaml:1: 'learn' is a section: expected a mapping of its keys");
    // a string longer than a value holds
    char yaml[VP_CONFIG_STR_MAX + 64];
    int len = snprintf(yaml, sizeof yaml, "data:\n  path: ");
    memset(yaml + len, 'a', VP_CONFIG_STR_MAX);
    snprintf(yaml + len + VP_CONFIG_STR_MAX, sizeof yaml - (size_t)len - VP_CONFIG_STR_MAX, "\n");
    expect_error(yaml, VP_ERR_INVALID_ARG, "bad.yaml:2: data.path: expected a string of at most 511 bytes");
}

static void test_duplicates_and_structure(void) {
    expect_error("learn:\n  lr: 0.1\n  lr: 0.2\n",
                 VP_ERR_INVALID_ARG, "bad.yaml:3: duplicate key 'learn.lr' (first at line 2)");
    expect_error("learn:\n  lr: 0.1\nmodel:\n  hidden: 64\nlearn:\n  batch: 5\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:5: duplicate key 'learn' (first at line 1)");
    expect_error("learn.lr: 0.1\nlearn:\n  lr: 0.2\n", VP_ERR_INVALID_ARG,
                 "bad.yaml:3: duplicate key 'learn.lr' (first set at line 1)");
    expect_error("- learn\n- model\n", VP_ERR_PARSE, "bad.yaml:1: expected a mapping of keys");
    expect_error("just text\n", VP_ERR_PARSE, "bad.yaml:1: expected a mapping of keys");
    expect_error("learn:\n  lr: 0.1\n---\nlearn:\n  lr: 0.2\n", VP_ERR_PARSE, "bad.yaml:3: a second YAML document");
    // malformed YAML: the line of the problem
    expect_error("learn:\n  lr: 0.1\n  batch: [1, 2\nmodel:\n", VP_ERR_PARSE, 
                 "bad.yaml:4: malformed YAML: did not find expected ',' or ']' while parsing a flow sequence started at line 3");
    expect_error("learn:\n  lr: 0.1\n bad indent: 3\n", VP_ERR_PARSE, "bad.yaml:3: malformed YAML");
    expect_error("learn:\n  lr: \"open\n", VP_ERR_PARSE, "bad.yaml:3: malformed YAML");
    expect_error("learn:\n\tlr: 0.1\n", VP_ERR_PARSE, "bad.yaml:2: malformed YAML");
}

static void test_good_forms(void) {
    vp_config c;
    vp_config_defaults(&c);
    // nested, dotted and flow forms mix; an empty document changes nothing
    CHECK_OK(vp_config_load_string(&c, "", "empty.yaml"));
    CHECK_OK(vp_config_load_string(&c, "# only a comment\n", "comment.yaml"));
    CHECK_OK(vp_config_load_string(&c,
                                   "learn: {lr: 3.0e-4, batch: 1_024}\nmodel.hidden: 128\nrun:\n  backend: 'cpu'\n"
                                   "  out: ~\ndata:\n  path: \"a b/c.csv\"\n  skip_bad_rows: yes\n",
                                   "good.yaml"));
    CHECK(c.learn.lr == 3e-4 && c.learn.batch == 1024 && c.model.hidden == 128, "numbers");
    CHECK(c.run.backend == VP_RUN_BACKEND_CPU && strcmp(c.run.out, "") == 0, "enum and null string");
    CHECK(strcmp(c.data.path, "a b/c.csv") == 0 && c.data.skip_bad_rows, "string and bool");
    // a later file applies on top of an earlier one
    CHECK_OK(vp_config_load_string(&c, "learn:\n  batch: 2048\n", "second.yaml"));
    CHECK(c.learn.batch == 2048 && c.learn.lr == 3e-4, "layered loads");
}

static void test_files(void) {
    vp_config c;
    vp_config_defaults(&c);
    CHECK_STATUS(vp_config_load_file(&c, "/nonexistent/dir/run.yaml"), VP_ERR_IO,
                 "cannot open config file '/nonexistent/dir/run.yaml'");
    // a file's messages carry its path
    char dir[] = "/tmp/vp_test_config_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/bad.yaml", dir);
    FILE* f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (!f) return;
    fputs("# a run\nlearn:\n  lr: 0.001\n\nreplay:\n  capacty: 100\n", f);
    fclose(f);
    char needle[400];
    snprintf(needle, sizeof needle, "%s:6: unknown key 'replay.capacty' (did you mean 'replay.capacity'?)", path);
    CHECK_STATUS(vp_config_load_file(&c, path), VP_ERR_INVALID_ARG, needle);
    char* over[] = {"learn.batch=64"};
    CHECK_STATUS(vp_config_resolve(&c, path, 1, over), VP_ERR_INVALID_ARG, needle);
    // a good file, then overrides win over it
    f = fopen(path, "w");
    fputs("learn:\n  lr: 0.001\n  batch: 32\nenv:\n  n_envs: 4\nreplay:\n  capacity: 1000\n  warmup: 100\n", f);
    fclose(f);
    CHECK_OK(vp_config_resolve(&c, path, 1, over));
    CHECK(c.learn.lr == 0.001 && c.learn.batch == 64 && c.replay.capacity == 1000, "file then overrides");
    remove(path);
    rmdir(dir);
}

int main(void) {
    RUN_TEST(test_unknown_keys);
    RUN_TEST(test_wrong_types_and_ranges);
    RUN_TEST(test_duplicates_and_structure);
    RUN_TEST(test_good_forms);
    RUN_TEST(test_files);
    return vpt_finish();
}
