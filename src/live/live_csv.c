/* One CSV line as a live bar (vp_live_parse_csv): time,open,high,low,close[,volume[,spread]],
 * the time in any form the loader reads and the numbers by the loader's own parser. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "data/data_internal.h"
#include "vulpes/live.h"

/* The columns in order. */
static const char* const NAMES[7] = {"time", "open", "high", "low", "close", "volume", "spread"};

vp_status vp_live_parse_csv(const char* line, int64_t line_no, vp_live_bar* out) {
    VP_REQUIRE(line != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_live_parse_csv: NULL argument");
    // the fields: split at commas, blanks and the line end trimmed
    const char* start[8];
    size_t len[8];
    int n = 0;
    const char* p = line;
    for (;;) {
        const char* e = p;
        while (*e && *e != ',' && *e != '\n' && *e != '\r') ++e;
        if (n < 8) {
            const char* a = p;
            const char* b = e;
            while (a < b && isspace((unsigned char)*a)) ++a;
            while (b > a && isspace((unsigned char)b[-1])) --b;
            start[n] = a;
            len[n] = (size_t)(b - a);
        }
        ++n;
        if (*e != ',') break;
        p = e + 1;
    }
    VP_REQUIRE(n >= 5 && n <= 7, VP_ERR_PARSE, "line %lld: %d fields, a bar has 5 to 7 "
               "(time,open,high,low,close[,volume[,spread]])", (long long)line_no, n);
    memset(out, 0, sizeof *out);
    VP_REQUIRE(vp_time_parse(start[0], len[0], &out->time_ms, NULL), VP_ERR_PARSE,
               "line %lld, field time: '%.*s' is not a time (ISO date-time, DD.MM.YYYY, Unix s or ms)",
               (long long)line_no, (int)(len[0] < 64 ? len[0] : 64), start[0]);
    double v[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 1; i < n; ++i) {
        VP_REQUIRE(vp_parse_double(start[i], len[i], &v[i - 1]), VP_ERR_PARSE,
                   "line %lld, field %s: '%.*s' is not a number", (long long)line_no, NAMES[i],
                   (int)(len[i] < 64 ? len[i] : 64), start[i]);
        VP_REQUIRE(isfinite(v[i - 1]), VP_ERR_PARSE, "line %lld, field %s: %.*s is not a finite number",
                   (long long)line_no, NAMES[i], (int)(len[i] < 64 ? len[i] : 64), start[i]);
    }
    out->open = v[0], out->high = v[1], out->low = v[2], out->close = v[3], out->volume = v[4];
    out->has_spread = n == 7;
    out->spread = v[5];
    return VP_OK;
}
