/* Tests of the progress line: the terminal form redrawn with '\r', the plain periodic
 * lines, throttling, rates, ETA and the number formats. */
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
    const char* want1 = "\riter 1/10 (10.0%) | env 100 | 1.00k steps/s | loss 0.5 | eps 0.900 | val Sharpe - | ETA 1s";
    CHECK(strcmp(capture_text(&c), want1) == 0, "line:\n'%s'\nexpected\n'%s'", capture_text(&c), want1);
    // within the interval: nothing
    s = stats(2, 200, 0.4, 0.8, NAN);
    CHECK(vp_progress_update(&p, &s, 100.3) == 0, "throttled");
    CHECK(strlen(capture_text(&c)) == strlen(want1), "throttled update wrote");
    // after it: redrawn in place; the rate covers the steps since the last print
    s = stats(5, 12345600, 0.25, 0.5, 1.234);
    CHECK(vp_progress_update(&p, &s, 100.7) == 1, "second print");
    const char* line2 = capture_text(&c) + strlen(want1);
    const char* want2 = "\riter 5/10 (50.0%) | env 12.3M | 20.6M steps/s | loss 0.25 | eps 0.500 | val Sharpe 1.23 | ETA 1s";
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
    CHECK(strstr(capture_text(&c) + before, "iter 10/10 (100.0%)") && strstr(capture_text(&c) + before, "val Sharpe -2.00 | ETA 0s"),
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

int main(void) {
    RUN_TEST(test_formats);
    RUN_TEST(test_terminal_line);
    RUN_TEST(test_plain_lines_and_notes);
    return vpt_finish();
}
