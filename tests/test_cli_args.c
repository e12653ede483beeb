/* The shared command-line parser (src/cli/cli_args.c): options of every kind, with their
 * values after a space or '=', config keys they override and the order of the overrides (an
 * option after the key=value ones, so it wins), positional arguments, --help anywhere, and the
 * one message of each usage error. */
#include "cli/cli_args.h"
#include "vp_test.h"

/* A train-like command: --out (run.out), --force, --resume, --backend (run.backend), a count. */
typedef struct line {
    const char* out;
    const char* resume;
    const char* backend;
    int force;
    int64_t folds;
} line;

static int parse(line* l, vp_cli_args* a, int overrides, int argc, const char* const* argv) {
    memset(l, 0, sizeof *l);
    l->folds = -7;
    const vp_cli_opt opts[] = {
        {"--out", VP_CLI_TEXT, &l->out, "run.out", 0, 0, NULL},
        {"--force", VP_CLI_SWITCH, &l->force, NULL, 0, 0, NULL},
        {"--resume", VP_CLI_TEXT, &l->resume, NULL, 0, 0, NULL},
        {"--backend", VP_CLI_CHOICE, &l->backend, "run.backend", 0, 0, VP_CLI_BACKENDS},
        {"--max-folds", VP_CLI_COUNT, &l->folds, "walkforward.max_folds", 0, 40, NULL},
        {"--steps", VP_CLI_COUNT, NULL, "walkforward.step_bars", -1, INT64_MAX, NULL},
        {"--anchored", VP_CLI_SWITCH, NULL, "walkforward.anchored", 0, 0, NULL},
    };
    const vp_cli_spec spec = {"train", opts, (int)(sizeof opts / sizeof opts[0]), 1, overrides, NULL};
    return vp_cli_parse(&spec, argc, (char**)argv, a);
}

#define PARSE(l, a, ov, ...) parse(l, a, ov, (int)(sizeof(const char*[]){__VA_ARGS__} / sizeof(const char*)), \
                                   (const char*[]){__VA_ARGS__})

static vp_cli_args args; /* 35 kB: off the stack */

static void test_values_and_order(void) {
    line l;
    int rc = PARSE(&l, &args, 1, "train", "run.backend=cuda", "cfg.yaml", "--out", "runs/x", "--backend=cpu",
                   "learn.lr=0.1", "--force", "--max-folds", "12", "--anchored", "--steps=-1");
    CHECK(rc == 0, "rc %d: %s", rc, args.error);
    CHECK(args.n_positional == 1 && strcmp(args.positional[0], "cfg.yaml") == 0, "positional");
    CHECK(args.given[0] && args.given[1] && !args.given[2] && args.given[3], "given flags");
    CHECK(l.out && strcmp(l.out, "runs/x") == 0 && l.force == 1 && l.backend && strcmp(l.backend, "cpu") == 0 &&
              l.folds == 12 && l.resume == NULL,
          "values: out %s, force %d, backend %s, folds %lld", l.out, l.force, l.backend, (long long)l.folds);
    // key=value as given, then the options' overrides in table order
    static const char* want[] = {"run.backend=cuda", "learn.lr=0.1", "run.out=runs/x", "run.backend=cpu",
                                 "walkforward.max_folds=12", "walkforward.step_bars=-1", "walkforward.anchored=true"};
    CHECK(args.n_over == 7, "%d overrides", args.n_over);
    for (int i = 0; i < 7 && i < args.n_over; ++i)
        CHECK(strcmp(args.over[i], want[i]) == 0, "override %d: '%s', expected '%s'", i, args.over[i], want[i]);
    // an option not given leaves its default
    rc = PARSE(&l, &args, 1, "train", "c.yaml");
    CHECK(rc == 0 && l.folds == -7 && l.out == NULL && args.n_over == 0 && !args.given[0], "defaults kept");
}

static void test_help(void) {
    line l;
    CHECK(PARSE(&l, &args, 1, "train", "--bogus", "--help") == VP_CLI_HELP, "--help after a bad option");
    CHECK(PARSE(&l, &args, 1, "train", "-h") == VP_CLI_HELP, "-h");
    CHECK(PARSE(&l, &args, 1, "train") == 0 && args.n_positional == 0, "nothing given");
}

/* Each usage error: exit code 2 and one message naming the command, the argument and the rule. */
static void test_errors(void) {
    line l;
    static const struct {
        const char* argv[4];
        int argc, overrides;
        const char* message;
    } cases[] = {
        {{"train", "--bogus"}, 2, 1, "vulpes train: unknown option '--bogus'"},
        {{"train", "--out"}, 2, 1, "vulpes train: --out needs a value"},
        {{"train", "--backend", "gpu"}, 3, 1, "vulpes train: --backend takes cpu, cuda or auto, got 'gpu'"},
        {{"train", "--max-folds", "41"}, 3, 1, "vulpes train: --max-folds needs an integer in [0, 40], got '41'"},
        {{"train", "--max-folds", "3x"}, 3, 1, "vulpes train: --max-folds needs an integer in [0, 40], got '3x'"},
        {{"train", "--steps", "-2"}, 3, 1, "vulpes train: --steps needs an integer >= -1, got '-2'"},
        {{"train", "--steps", "99999999999999999999"}, 3, 1,
         "vulpes train: --steps needs an integer >= -1, got '99999999999999999999'"},
        {{"train", "--force=yes"}, 2, 1, "vulpes train: --force takes no value, got '--force=yes'"},
        {{"train", "--force", "--force"}, 3, 1, "vulpes train: --force given twice"},
        {{"train", "a.yaml", "b.yaml"}, 3, 1, "vulpes train: unexpected argument 'b.yaml'"},
        {{"train", "a=1"}, 2, 0, "vulpes train: 'a=1': train takes no key=value config overrides"},
        {{"train", "=1"}, 2, 1, "vulpes train: '=1' is not key=value: the key is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int rc = parse(&l, &args, cases[i].overrides, cases[i].argc, cases[i].argv);
        CHECK(rc == 2 && strcmp(args.error, cases[i].message) == 0, "case %zu: rc %d, '%s', expected '%s'", i, rc,
              args.error, cases[i].message);
    }
}

/* The --backend choice accepts exactly its three values; "--flag=value" and "--flag value" agree. */
static void test_backend(void) {
    line l;
    static const char* ok[] = {"cpu", "cuda", "auto"};
    for (int i = 0; i < 3; ++i) {
        CHECK(PARSE(&l, &args, 1, "train", "--backend", ok[i]) == 0 && strcmp(l.backend, ok[i]) == 0, "%s", ok[i]);
        char eq[32];
        snprintf(eq, sizeof eq, "--backend=%s", ok[i]);
        CHECK(PARSE(&l, &args, 1, "train", eq) == 0 && strcmp(l.backend, ok[i]) == 0 && args.n_over == 1 &&
                  strncmp(args.over[0], "run.backend=", 12) == 0 && strcmp(args.over[0] + 12, ok[i]) == 0,
              "%s", eq);
    }
    CHECK(PARSE(&l, &args, 1, "train", "--backend", "CPU") == 2, "choices are exact");
}

/* Too many overrides: a message, not an overflow. */
static void test_limits(void) {
    enum { N = VP_CLI_MAX_OVERRIDES + 2 };
    static const char* argv[N];
    argv[0] = "train";
    for (int i = 1; i < N; ++i) argv[i] = "k=v";
    line l;
    CHECK(parse(&l, &args, 1, N - 1, argv) == 0 && args.n_over == VP_CLI_MAX_OVERRIDES, "the most overrides");
    CHECK(parse(&l, &args, 1, N, argv) == 2 && strstr(args.error, "more than 256 key=value overrides"), "'%s'",
          args.error);
}

int main(void) {
    RUN_TEST(test_values_and_order);
    RUN_TEST(test_help);
    RUN_TEST(test_errors);
    RUN_TEST(test_backend);
    RUN_TEST(test_limits);
    return vpt_finish();
}
