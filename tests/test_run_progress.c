/* Tests of the progress line: the terminal form redrawn with '\r', the plain periodic
 * lines, throttling, rates, ETA, the number formats, a walk-forward's line over its folds,
 * the clock restarted after the first iteration, the CPU warning of a GPU-sized run and the
 * plurals. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "vp_test.h"
#include "vulpes/run.h"

/* A memory stream and its buffer. */
typedef struct capture {
    char* text;
    size_t len;
    FILE* f;
} capture;

static void capture_open(capture* c) {
    c->text = NULL;
    c->len = 0;
    c->f = open_memstream(&c->text, &c->len);
}

/* What was written so far (flushed). */
static const char* capture_text(capture* c) {
    static char empty[1];
    fflush(c->f);
    return c->text ? c->text : empty;
}

static void capture_close(capture* c) {
    fclose(c->f);
    free(c->text);
}

static vp_progress_stats stats(int64_t it, int64_t env, double loss, double eps, double sharpe) {
    vp_progress_stats s = {it, env, it * 2, loss, eps, sharpe};
    return s;
}

static void test_formats(void) {
    char b[32];
    const double counts[] = {0, 999, 1000, 4920000, 123456789, 1.5e9, 999999, -2500};
    const char* cw[] = {"0", "999", "1.00k", "4.92M", "123M", "1.50G", "1.00M", "-2.50k"};
    for (int i = 0; i < 8; ++i)
        CHECK(strcmp(vp_format_count(counts[i], b, sizeof b), cw[i]) == 0, "%g -> %s, expected %s", counts[i], b, cw[i]);
    const double secs[] = {0, 45, 59.6, 192, 7500, 3 * 86400 + 4 * 3600, -1, NAN, INFINITY};
    const char* sw[] = {"0s", "45s", "1m00s", "3m12s", "2h05m", "3d04h", "-", "-", "-"};
    for (int i = 0; i < 9; ++i)
        CHECK(strcmp(vp_format_duration(secs[i], b, sizeof b), sw[i]) == 0, "%g s -> %s, expected %s", secs[i], b, sw[i]);
}

static void test_terminal_line(void) {
    capture c;
    capture_open(&c);
    vp_progress p;
    vp_progress_init(&p, c.f, 1, 10, 0.5, 100.0, NULL);
    // the first update prints: 100 env steps in 0.1 s, 1 of 10 iterations in 0.1 s
    vp_progress_stats s = stats(1, 100, 0.5, 0.9, NAN);
    CHECK(vp_progress_update(&p, &s, 100.1) == 1, "first update prints");
    const char* want1 =
        "\riter 1/10 (10.0%) | env 100 | 1.00k steps/s | loss 0.5 | eps 0.900 | val Sharpe - | elapsed 0s | ETA 1s";
    CHECK(strcmp(capture_text(&c), want1) == 0, "line:\n'%s'\nexpected\n'%s'", capture_text(&c), want1);
    // within the interval: nothing
    s = stats(2, 200, 0.4, 0.8, NAN);
    CHECK(vp_progress_update(&p, &s, 100.3) == 0, "throttled");
    CHECK(strlen(capture_text(&c)) == strlen(want1), "throttled update wrote");
    // after it: redrawn in place; the rate covers the steps since the last print
    s = stats(5, 12345600, 0.25, 0.5, 1.234);
    CHECK(vp_progress_update(&p, &s, 100.7) == 1, "second print");
    const char* line2 = capture_text(&c) + strlen(want1);
    const char* want2 =
        "\riter 5/10 (50.0%) | env 12.3M | 20.6M steps/s | loss 0.25 | eps 0.500 | val Sharpe 1.23 | elapsed 1s | ETA 1s";
    CHECK(strncmp(line2, want2, strlen(want2)) == 0, "line:\n'%s'\nexpected\n'%s'", line2, want2);
    size_t len2 = strlen(line2);
    // a shorter line blanks what the longer one left
    s = stats(6, 12345700, 0.5, 0.25, 0.5);
    CHECK(vp_progress_update(&p, &s, 101.3) == 1, "third print");
    const char* line3 = capture_text(&c) + strlen(want1) + len2;
    CHECK(strlen(line3) >= len2 && line3[strlen(line3) - 1] == ' ', "shorter line padded: '%s'", line3);
    CHECK(strstr(line3, "val Sharpe 0.50") && strstr(line3, "167 steps/s"), "third line '%s'", line3);
    // the last iteration prints even inside the interval; finish ends the line
    size_t before = strlen(capture_text(&c));
    s = stats(10, 20000000, 0.1, 0.05, -2.0);
    CHECK(vp_progress_update(&p, &s, 101.4) == 1, "final update prints");
    CHECK(strstr(capture_text(&c) + before, "iter 10/10 (100.0%)") && strstr(capture_text(&c) + before, "val Sharpe -2.00 | elapsed 1s | ETA 0s"),
          "final line '%s'", capture_text(&c) + before);
    vp_progress_finish(&p);
    const char* all = capture_text(&c);
    CHECK(all[strlen(all) - 1] == '\n' && strchr(all, '\n') == all + strlen(all) - 1, "one newline, at the end");
    capture_close(&c);
}

static void test_plain_lines_and_notes(void) {
    capture c;
    capture_open(&c);
    vp_progress p;
    vp_progress_stats start = stats(100, 50000, NAN, NAN, NAN);
    vp_progress_init(&p, c.f, 0, 200, 10.0, 0.0, &start);
    // a resumed run: rates and ETA from its own start
    vp_progress_stats s = stats(110, 60000, 0.75, 0.1, NAN);
    CHECK(vp_progress_update(&p, &s, 5.0) == 1, "first");
    s = stats(120, 70000, 0.7, 0.1, NAN);
    CHECK(vp_progress_update(&p, &s, 9.0) == 0, "throttled");
    s = stats(150, 100000, 0.7, 0.1, 0.8);
    CHECK(vp_progress_update(&p, &s, 25.0) == 1, "after the interval");
    const char* want = "[5s] iter 110/200 (55.0%) | env 60.0k | 2.00k steps/s | loss 0.75 | eps 0.100 | val Sharpe - | ETA 45s\n"
                       "[25s] iter 150/200 (75.0%) | env 100k | 2.00k steps/s | loss 0.7 | eps 0.100 | val Sharpe 0.80 | ETA 25s\n";
    CHECK(strcmp(capture_text(&c), want) == 0, "plain lines:\n%s\nexpected\n%s", capture_text(&c), want);
    CHECK(strchr(capture_text(&c), '\r') == NULL, "no carriage return in plain mode");
    vp_progress_note(&p, "validation: Sharpe 0.80");
    vp_progress_finish(&p);
    CHECK(strstr(capture_text(&c), "ETA 25s\nvalidation: Sharpe 0.80\n") != NULL, "note '%s'", capture_text(&c));
    capture_close(&c);
    // on a terminal a note blanks the progress line first
    capture_open(&c);
    vp_progress_init(&p, c.f, 1, 5, 0.0, 0.0, NULL);
    s = stats(1, 10, 0.5, 0.5, NAN);
    vp_progress_update(&p, &s, 1.0);
    size_t drawn = strlen(capture_text(&c)) - 1;
    vp_progress_note(&p, "checkpoint written");
    const char* after = capture_text(&c) + drawn + 1;
    CHECK(after[0] == '\r' && strspn(after + 1, " ") == drawn && strcmp(after + 1 + drawn, "\rcheckpoint written\n") == 0,
          "terminal note '%s'", after);
    vp_progress_finish(&p);
    CHECK(capture_text(&c)[strlen(capture_text(&c)) - 1] == '\n', "finish after a note");
    capture_close(&c);
}

/* A walk-forward's line: the fold shown, the folds done and running, the fold's iterations,
 * the ETA over every fold's iterations (work), the rate over the summed env steps. */
static void test_folds_line(void) {
    capture c;
    capture_open(&c);
    vp_progress p;
    // 3 folds of 100 iterations left: 300 units of work
    vp_progress_init(&p, c.f, 0, 300, 0.0, 0.0, NULL);
    vp_progress_stats s = stats(40, 4000, 0.5, 0.2, NAN);
    vp_progress_folds f = {2, 5, 2, 1, 100, 140};
    CHECK(vp_progress_update_folds(&p, &s, &f, 14.0) == 1, "first");
    // 140 of 300 in 14 s: 160 more at 10 per second
    const char* want = "[14s] fold 2/5 (2 done) | iter 40/100 (40.0%) | env 4.00k | 286 steps/s | loss 0.5 | eps 0.200 | "
                       "val Sharpe - | ETA 16s\n";
    CHECK(strcmp(capture_text(&c), want) == 0, "line:\n%s\nexpected\n%s", capture_text(&c), want);
    // two at once: said; the last unit of work prints
    size_t before = strlen(capture_text(&c));
    vp_progress_folds g = {5, 5, 4, 2, 100, 300};
    s = stats(100, 9000, 0.25, 0.05, 0.5);
    CHECK(vp_progress_update_folds(&p, &s, &g, 20.0) == 1, "final");
    const char* want2 = "[20s] fold 5/5 (4 done, 2 running) | iter 100/100 (100.0%) | env 9.00k | 833 steps/s | loss 0.25 | "
                        "eps 0.050 | val Sharpe 0.50 | ETA 0s\n";
    CHECK(strcmp(capture_text(&c) + before, want2) == 0, "line:\n%s\nexpected\n%s", capture_text(&c) + before, want2);
    capture_close(&c);
}

/* After a rebase the ETA counts from it (the first, slow iteration left out); the elapsed
 * time still counts from init. */
static void test_rebase(void) {
    capture c;
    capture_open(&c);
    vp_progress p;
    vp_progress_init(&p, c.f, 0, 101, 0.0, 0.0, NULL);
    vp_progress_stats s = stats(0, 0, NAN, NAN, NAN);
    CHECK(vp_progress_update(&p, &s, 0.5) == 1, "the first line at once");
    CHECK(strstr(capture_text(&c), "[1s] iter 0/101 (0.0%) | env 0 | 0 steps/s") && strstr(capture_text(&c), "ETA -\n"),
          "first line '%s'", capture_text(&c));
    // iteration 1 took 30 s (graph capture); then 10 iterations in 5 s: ETA 90 x 0.5 s
    vp_progress_rebase(&p, 1, 10, 30.0);
    s = stats(11, 110, 0.5, 0.5, NAN);
    size_t before = strlen(capture_text(&c));
    CHECK(vp_progress_update(&p, &s, 35.0) == 1, "after the rebase");
    CHECK(strstr(capture_text(&c) + before, "[35s] iter 11/101 (10.9%) | env 110 | 20 steps/s") &&
              strstr(capture_text(&c) + before, "| ETA 45s\n"),
          "rebased line '%s'", capture_text(&c) + before);
    capture_close(&c);
}

/* The CPU warning: a pure function of the measured time, the count measured and the
 * iterations planned; GPU-sized means more than 15 minutes projected. */
static void test_cpu_advice(void) {
    char b[640];
    CHECK(vp_progress_cpu_advice(4.2, 3, 20000, b, sizeof b) == 1, "20000 x 4.2 s is GPU-sized");
    const char* want = "warning: this config is sized for a GPU: on the CPU an iteration takes 4.2 s (measured over 3 "
                       "iterations), so 20000 iterations take about 23h20m (over 15 minutes); examples/eurusd.yaml is "
                       "the CPU example (a 64-wide network, batch 256, 32 envs: minutes on 2 cores), or run on a GPU "
                       "(--backend cuda)";
    CHECK(strcmp(b, want) == 0, "text:\n%s\nexpected\n%s", b, want);
    CHECK(vp_progress_cpu_advice(0.0125, 1, 100000, b, sizeof b) == 1 &&
              strstr(b, "takes 12.5 ms (measured over 1 iteration), so 100000 iterations take about 20m50s"),
          "ms text: %s", b);
    // 2000 iterations of 0.12 s: 4 minutes, the CPU example's size: no warning
    CHECK(vp_progress_cpu_advice(0.12, 3, 2000, b, sizeof b) == 0 && b[0] == '\0', "a CPU-sized run warned: %s", b);
    CHECK(vp_progress_cpu_advice(0.9, 3, 1000, b, sizeof b) == 0, "exactly 15 minutes is not over them");
    CHECK(vp_progress_cpu_advice(0.901, 3, 1000, b, sizeof b) == 1 && strstr(b, "about 15m01s"), "just over: %s", b);
    CHECK(vp_progress_cpu_advice(NAN, 3, 1000, b, sizeof b) == 0, "NaN time");
}

/* The warning through the printer: once, after the measured iterations, only with warn_cpu. */
static void test_cpu_warning_printed(void) {
    for (int cpu = 0; cpu < 2; ++cpu) {
        capture c;
        capture_open(&c);
        vp_progress p;
        vp_progress_init(&p, c.f, 0, 20000, 0.0, 0.0, NULL);
        p.warn_cpu = cpu;
        vp_progress_rebase(&p, 1, 0, 10.0);
        vp_progress_stats s = stats(2, 0, NAN, NAN, NAN);
        vp_progress_update(&p, &s, 12.0);
        CHECK(strstr(capture_text(&c), "warning:") == NULL, "warned after one timed iteration of 2 s");
        s = stats(4, 0, NAN, NAN, NAN);
        vp_progress_update(&p, &s, 16.0);
        const char* w = strstr(capture_text(&c), "warning: this config is sized for a GPU: on the CPU an iteration takes "
                                                 "2 s (measured over 3 iterations), so 20000 iterations take about 11h06m");
        CHECK(cpu ? w != NULL : w == NULL, "cpu %d: warning %s:\n%s", cpu, w ? "printed" : "missing", capture_text(&c));
        s = stats(8, 0, NAN, NAN, NAN);
        vp_progress_update(&p, &s, 24.0);
        CHECK(!w || strstr(w + 1, "warning:") == NULL, "warned twice");
        capture_close(&c);
    }
}

static void test_plural(void) {
    CHECK(strcmp(vp_plural(1, "fold", "folds"), "fold") == 0 && strcmp(vp_plural(0, "fold", "folds"), "folds") == 0 &&
              strcmp(vp_plural(2, "fold", "folds"), "folds") == 0 && strcmp(vp_plural(-1, "bar", "bars"), "bar") == 0,
          "plurals");
}

int main(void) {
    RUN_TEST(test_formats);
    RUN_TEST(test_terminal_line);
    RUN_TEST(test_plain_lines_and_notes);
    RUN_TEST(test_folds_line);
    RUN_TEST(test_rebase);
    RUN_TEST(test_cpu_advice);
    RUN_TEST(test_cpu_warning_printed);
    RUN_TEST(test_plural);
    return vpt_finish();
}
