/* live_decide: the live API (vulpes/live.h) from a shell.
 *
 *   live_decide CHECKPOINT [--force] [KEY=VALUE ...] < bars.csv
 *
 * Reads bars as CSV lines on stdin, time,open,high,low,close[,volume[,spread]] (a first line
 * that is not a bar, such as a header, is skipped), and prints one JSON object per line on
 * stdout for every bar it decides at: the decision for the bar after it, the fields of
 * `vulpes act`. A bad line is reported on stderr naming the line and the field, and skipped:
 * the next line is read as if it had not come. Exits 0, or 1 when a line was bad or the
 * checkpoint could not be opened. KEY=VALUE changes an instrument.* key, data.price_side or
 * metrics.risk_free_rate, as for vulpes act. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/api.h"
#include "vulpes/live.h"

int main(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: live_decide CHECKPOINT [--force] [KEY=VALUE ...] < bars.csv\n"
                "Prints one JSON decision per bar read (time,open,high,low,close[,volume[,spread]]).\n");
        return argc < 2 ? 2 : 0;
    }
    vp_live_opts o = vp_live_opts_default();
    const char** over = (const char**)calloc((size_t)argc, sizeof(char*));
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--force") == 0) o.force = 1;
        else over[o.n_overrides++] = argv[i];
    }
    o.overrides = over;
    vp_live* h = NULL;
    if (vp_live_open(&h, argv[1], &o) != VP_OK) {
        fprintf(stderr, "live_decide: %s\n", vp_api_last_error());
        free(over);
        return 1;
    }
    char line[4096];
    long long line_no = 0;
    int bad = 0;
    while (fgets(line, sizeof line, stdin)) {
        ++line_no;
        if (line[0] == '\n' || line[0] == '\r' || line[0] == '\0') continue;
        vp_live_bar bar;
        if (vp_live_parse_csv(line, line_no, &bar) != VP_OK) {
            if (line_no == 1) continue; /* a header */
            fprintf(stderr, "live_decide: %s\n", vp_api_last_error());
            bad = 1;
            continue;
        }
        vp_decision d;
        int decided = 0;
        if (vp_live_push(h, &bar, &d, &decided) != VP_OK) {
            fprintf(stderr, "live_decide: line %lld: %s\n", line_no, vp_api_last_error());
            bad = 1;
            continue;
        }
        if (!decided) continue;
        char* text = NULL;
        if (vp_live_decision_json(h, &d, 0, &text) != VP_OK) {
            fprintf(stderr, "live_decide: line %lld: %s\n", line_no, vp_api_last_error());
            bad = 1;
            continue;
        }
        printf("%s\n", text);
        fflush(stdout);
        free(text);
    }
    vp_live_close(h);
    free(over);
    return bad;
}
