/* Tests of data.path's resolution: set in a config file it is relative to the file's folder
 * (nested and dotted forms, "..", a file in the working directory), absolute paths, synth:
 * specs and "" are taken as written, a command-line override and a config text stay as
 * given, a path too long once joined is refused naming the file and line; and
 * vp_config_absolute_data_path (what a run records): realpath, or the working directory in
 * front for a file that is absent. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdlib.h>
#include <unistd.h>

#include "test_data_util.h"
#include "vp_test.h"

/* Loads `yaml` written as dir/name into *c (defaults first). */
static vp_status load_as(const char* dir, const char* name, const char* yaml, vp_config* c) {
    char path[600];
    if (!tdu_write(dir, name, yaml, path, sizeof path)) return VP_ERR_IO;
    vp_config_defaults(c);
    return vp_config_load_file(c, path);
}

static void test_relative_to_file(void) {
    char dir[256], sub[300], want[700];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    snprintf(sub, sizeof sub, "%s/conf", dir);
    CHECK(mkdir(sub, 0755) == 0, "mkdir %s", sub);
    vp_config c;
    // nested and dotted keys, a parent folder
    CHECK_OK(load_as(sub, "a.yaml", "data:\n  path: bars/eurusd.csv\n", &c));
    snprintf(want, sizeof want, "%s/bars/eurusd.csv", sub);
    CHECK(strcmp(c.data.path, want) == 0, "nested: %s, expected %s", c.data.path, want);
    CHECK_OK(load_as(sub, "b.yaml", "data.path: ../eurusd.csv\n", &c));
    snprintf(want, sizeof want, "%s/../eurusd.csv", sub);
    CHECK(strcmp(c.data.path, want) == 0, "dotted: %s, expected %s", c.data.path, want);
    // absolute, synthetic, empty: as written
    CHECK_OK(load_as(sub, "c.yaml", "data:\n  path: /abs/eurusd.csv\n", &c));
    CHECK(strcmp(c.data.path, "/abs/eurusd.csv") == 0, "absolute: %s", c.data.path);
    CHECK_OK(load_as(sub, "d.yaml", "data:\n  path: \"synth:trend:bars=100\"\n", &c));
    CHECK(strcmp(c.data.path, "synth:trend:bars=100") == 0, "synthetic: %s", c.data.path);
    CHECK_OK(load_as(sub, "e.yaml", "data:\n  path: \"\"\n", &c));
    CHECK(strcmp(c.data.path, "") == 0, "empty: %s", c.data.path);
    // a file that does not set data.path leaves an earlier value alone
    char path[600];
    CHECK(tdu_write(sub, "f.yaml", "learn:\n  lr: 0.001\n", path, sizeof path), "write f.yaml");
    vp_config_defaults(&c);
    snprintf(c.data.path, sizeof c.data.path, "kept.csv");
    CHECK_OK(vp_config_load_file(&c, path));
    CHECK(strcmp(c.data.path, "kept.csv") == 0 && c.learn.lr == 0.001, "unset data.path changed: %s", c.data.path);
    // an override after the file is relative to the working directory
    CHECK(tdu_write(sub, "g.yaml", "data:\n  path: x.csv\n", path, sizeof path), "write g.yaml");
    char* over[] = {"data.path=here/y.csv"};
    CHECK_OK(vp_config_resolve(&c, path, 1, over));
    CHECK(strcmp(c.data.path, "here/y.csv") == 0, "override: %s", c.data.path);
    // a config text (a checkpoint's) keeps the path as written
    vp_config_defaults(&c);
    CHECK_OK(vp_config_load_string(&c, "data:\n  path: rel/z.csv\n", "text"));
    CHECK(strcmp(c.data.path, "rel/z.csv") == 0, "text: %s", c.data.path);
    // a file in the working directory: its folder is ".", the path unchanged
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(sub) == 0, "chdir %s", sub);
    vp_config_defaults(&c);
    CHECK_OK(vp_config_load_file(&c, "g.yaml"));
    CHECK(strcmp(c.data.path, "x.csv") == 0, "config in the working directory: %s", c.data.path);
    CHECK(chdir(cwd) == 0, "chdir back");
    // too long once joined: refused naming the file, the line and the key
    char yaml[700], name[506];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(yaml, sizeof yaml, "learn:\n  lr: 0.001\ndata:\n  path: %s\n", name);
    char needle[400];
    snprintf(needle, sizeof needle, "%s/h.yaml:4: data.path '", sub);
    CHECK_STATUS(load_as(sub, "h.yaml", yaml, &c), VP_ERR_INVALID_ARG, needle);
    CHECK_STATUS(load_as(sub, "h.yaml", yaml, &c), VP_ERR_INVALID_ARG,
                 "joined to the config file's folder");
    tdu_rmtree(dir);
}

/* The shipped example, from the repository root: its data file next to it. */
static void test_example(void) {
    vp_config c;
    CHECK_OK(vp_config_resolve(&c, "examples/walkforward_eurusd.yaml", 0, NULL));
    CHECK(strcmp(c.data.path, "examples/data/eurusd_1h_2017.csv") == 0, "walk-forward example: %s", c.data.path);
}

/* What a run records: the real path of an existing file, the working directory in front of
 * an absent one; absolute, synthetic and empty unchanged. */
static void test_absolute(void) {
    vp_config c;
    vp_config_defaults(&c);
    snprintf(c.data.path, sizeof c.data.path, "examples/data/../data/eurusd_1h_2017.csv");
    CHECK_OK(vp_config_absolute_data_path(&c));
    char* real = realpath("examples/data/eurusd_1h_2017.csv", NULL);
    CHECK(real && strcmp(c.data.path, real) == 0 && c.data.path[0] == '/', "existing file: %s", c.data.path);
    free(real);
    char cwd[1024], want[1200];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    snprintf(c.data.path, sizeof c.data.path, "no/such.csv");
    CHECK_OK(vp_config_absolute_data_path(&c));
    snprintf(want, sizeof want, "%s/no/such.csv", cwd);
    CHECK(strcmp(c.data.path, want) == 0, "absent file: %s, expected %s", c.data.path, want);
    static const char* same[] = {"/abs/x.csv", "synth:ou:bars=10", ""};
    for (int i = 0; i < 3; ++i) {
        snprintf(c.data.path, sizeof c.data.path, "%s", same[i]);
        CHECK_OK(vp_config_absolute_data_path(&c));
        CHECK(strcmp(c.data.path, same[i]) == 0, "'%s' became '%s'", same[i], c.data.path);
    }
}

int main(void) {
    RUN_TEST(test_relative_to_file);
    RUN_TEST(test_example);
    RUN_TEST(test_absolute);
    return vpt_finish();
}
