/* Writing bars as CSV (for synthetic markets, exports and tests). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vulpes/data.h"

vp_status vp_bars_save_csv(const vp_bars* b, const char* path, int decimals) {
    VP_REQUIRE(b != NULL && path != NULL && b->n >= 1, VP_ERR_INVALID_ARG, "vp_bars_save_csv: NULL or empty argument");
    VP_REQUIRE(decimals <= 17, VP_ERR_INVALID_ARG, "vp_bars_save_csv: decimals %d > 17", decimals);
    FILE* fp = fopen(path, "wb");
    if (!fp) VP_FAIL(VP_ERR_IO, "%s: cannot create: %s", path, strerror(errno));

    /* Header, then one line per bar; values exact (%.17g) or rounded (%.Nf). */
    int ok = fputs("time,open,high,low,close,volume\n", fp) >= 0;
    char tb[40];
    for (int64_t t = 0; t < b->n && ok; ++t) {
        vp_time_format_iso(b->time_ms[t], tb, sizeof tb);
        if (decimals < 0)
            ok = fprintf(fp, "%s,%.17g,%.17g,%.17g,%.17g,%.17g\n", tb, b->open[t], b->high[t], b->low[t], b->close[t],
                         b->volume[t]) > 0;
        else
            ok = fprintf(fp, "%s,%.*f,%.*f,%.*f,%.*f,%.*f\n", tb, decimals, b->open[t], decimals, b->high[t], decimals,
                         b->low[t], decimals, b->close[t], decimals, b->volume[t]) > 0;
    }
    if (fclose(fp) != 0) ok = 0;
    if (!ok) VP_FAIL(VP_ERR_IO, "%s: write failed", path);
    return VP_OK;
}
