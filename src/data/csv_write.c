/* Writing bars as CSV (for synthetic markets, exports and tests). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vulpes/data.h"

/* Writes v with `dec` decimals (0..9) at p, rounding half away from zero; returns the
 * characters written, or 0 when v is outside the fast range (the caller then uses printf).
 * Rounding v * 10^dec is monotonic in v, so low <= open, close <= high survives it. */
static int fixed(char* p, double v, int dec) {
    static const double P10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    if (!(fabs(v) < 1e9) || dec < 0 || dec > 9) return 0;
    double s = round(fabs(v) * P10[dec]);
    uint64_t u = (uint64_t)s, ip = u / (uint64_t)P10[dec], fp = u % (uint64_t)P10[dec];
    char tmp[32];
    int n = 0;
    /* Fraction digits (reversed), the point, then the integer digits (reversed). */
    for (int i = 0; i < dec; ++i, fp /= 10) tmp[n++] = (char)('0' + fp % 10);
    if (dec > 0) tmp[n++] = '.';
    do {
        tmp[n++] = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    int k = 0;
    if (v < 0 && u != 0) p[k++] = '-';
    while (n > 0) p[k++] = tmp[--n];
    return k;
}

/* Appends one value and a separator to the line at *pos. */
static void put(char* line, size_t cap, int* pos, double v, int decimals, char sep) {
    int k = decimals >= 0 ? fixed(line + *pos, v, decimals) : 0;
    if (k == 0)
        k = decimals >= 0 ? snprintf(line + *pos, cap - (size_t)*pos, "%.*f", decimals, v)
                          : snprintf(line + *pos, cap - (size_t)*pos, "%.17g", v);
    *pos += k;
    line[(*pos)++] = sep;
}

vp_status vp_bars_save_csv(const vp_bars* b, const char* path, int decimals) {
    VP_REQUIRE(b != NULL && path != NULL && b->n >= 1, VP_ERR_INVALID_ARG, "vp_bars_save_csv: NULL or empty argument");
    VP_REQUIRE(decimals <= 17, VP_ERR_INVALID_ARG, "vp_bars_save_csv: decimals %d > 17", decimals);
    FILE* fp = fopen(path, "wb");
    if (!fp) VP_FAIL(VP_ERR_IO, "%s: cannot create: %s", path, strerror(errno));

    /* Header, then one line per bar; values exact (%.17g) or rounded to `decimals`. */
    int ok = fputs(b->spread ? "time,open,high,low,close,volume,spread\n" : "time,open,high,low,close,volume\n", fp) >= 0;
    char line[7 * 360]; /* 7 values of up to 330 characters (%.17f of 1e308) and separators */
    for (int64_t t = 0; t < b->n && ok; ++t) {
        vp_time_format_iso(b->time_ms[t], line, 40);
        int pos = (int)strlen(line);
        line[pos++] = ',';
        put(line, sizeof line, &pos, b->open[t], decimals, ',');
        put(line, sizeof line, &pos, b->high[t], decimals, ',');
        put(line, sizeof line, &pos, b->low[t], decimals, ',');
        put(line, sizeof line, &pos, b->close[t], decimals, ',');
        put(line, sizeof line, &pos, b->volume[t], decimals, b->spread ? ',' : '\n');
        if (b->spread) put(line, sizeof line, &pos, b->spread[t], decimals, '\n');
        ok = fwrite(line, 1, (size_t)pos, fp) == (size_t)pos;
    }
    if (fclose(fp) != 0) ok = 0;
    if (!ok) VP_FAIL(VP_ERR_IO, "%s: write failed", path);
    return VP_OK;
}
