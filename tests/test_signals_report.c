/* report.html's "Training signals": from train lines holding the bus's keys, the section with
 * one chart per group (eleven, each named, every slot's key in a legend but the clip threshold
 * and the counts); from lines holding only
 * sig.lr (a schedule without the bus), the learning-rate chart alone; from lines without
 * either, no section. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <unistd.h>

#include "test_util.h"

#include "vp_test.h"
#include "vulpes/report.h"
#include "vulpes/signals.h"

/* The page of a two-point report over the metrics text `lines` (written to a file). */
static char* page(const char* lines) {
    char mpath[256], hpath[256];
    const char* tmp = getenv("TMPDIR");
    snprintf(mpath, sizeof mpath, "%s/vulpes-sigrep-%ld.jsonl", tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
    snprintf(hpath, sizeof hpath, "%s/vulpes-sigrep-%ld.html", tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
    FILE* f = fopen(mpath, "wb");
    CHECK(f != NULL, "cannot write %s", mpath);
    if (!f) return NULL;
    fputs(lines, f);
    fclose(f);
    const int64_t t[2] = {1483228800000LL, 1483232400000LL};
    const double eq[2] = {100.0, 101.0};
    vp_report r;
    memset(&r, 0, sizeof r);
    r.title = "signals", r.n = 2, r.times_ms = t, r.equity = eq, r.run_metrics = mpath;
    CHECK_OK(vp_report_write(hpath, &r));
    char* html = vpt_slurp(hpath, NULL);
    remove(mpath), remove(hpath);
    return html;
}

/* A train line at iteration it with every bus key set to v (counts as integers). */
static void bus_line(char* out, size_t n, int it, double v) {
    int k = snprintf(out, n, "{\"event\":\"train\",\"iteration\":%d,\"loss\":1.5", it);
    for (int s = 0; s < VP_SIG_COUNT && k > 0 && (size_t)k < n; ++s)
        k += snprintf(out + k, n - (size_t)k, ",\"%s\":%g", vp_signal_key(s), v + s);
    if (k > 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, "}\n");
}

static void test_sections(void) {
    char a[4096], b[4096], both[8192];
    bus_line(a, sizeof a, 5, 0.25), bus_line(b, sizeof b, 10, 0.5);
    snprintf(both, sizeof both, "%s%s", a, b);
    char* html = page(both);
    CHECK(html && strstr(html, "<h2>Training signals</h2>"), "no signals section");
    static const char* names[] = {"loss EMAs", "loss and TD-error trends", "TD error",
                                  "online Q and its divergence from the target", "C51 entropy (nats) and atoms in use",
                                  "gradient norm per branch", "target drift", "estimated edge and its variance",
                                  "learning rate", "Polyak tau", "epsilon scale, gamma and Kelly cap"};
    for (size_t i = 0; html && i < sizeof names / sizeof names[0]; ++i) {
        char label[128];
        snprintf(label, sizeof label, "aria-label=\"%s\"", names[i]);
        CHECK(strstr(html, label) != NULL, "no chart '%s'", names[i]);
    }
    // every slot but the clip threshold (a constant) and the two counts is a curve
    for (int s = 0; html && s < VP_SIG_RULE_RUNS; ++s)
        if (s != VP_SIG_CLIP) CHECK(strstr(html, vp_signal_key(s)) != NULL, "key %s not drawn", vp_signal_key(s));
    free(html);
    // a schedule alone: the learning-rate chart only
    html = page("{\"event\":\"train\",\"iteration\":5,\"loss\":1,\"sig.lr\":0.001}\n"
                "{\"event\":\"train\",\"iteration\":10,\"loss\":1,\"sig.lr\":0.0005}\n");
    CHECK(html && strstr(html, "<h2>Training signals</h2>") && strstr(html, "aria-label=\"learning rate\"") &&
              !strstr(html, "aria-label=\"Polyak tau\""),
          "a schedule alone: not the learning-rate chart alone");
    free(html);
    // no bus: no section
    html = page("{\"event\":\"train\",\"iteration\":5,\"loss\":1}\n{\"event\":\"train\",\"iteration\":10,\"loss\":0.5}\n");
    CHECK(html && !strstr(html, "Training signals"), "a section without the bus");
    free(html);
}

int main(void) {
    RUN_TEST(test_sections);
    return vpt_finish();
}
