/* report.html's panels of the market: the close price with the trades marked on it (entries
 * as triangles, up for a long and down for a short, exits as circles), and the position held
 * over time. */
#include <stdlib.h>

#include "eval/report_internal.h"
#include "vulpes/report.h"

#define COLOR_PRICE "#555555"
#define COLOR_LONG "#1a9850"
#define COLOR_SHORT "#d73027"
#define COLOR_EXIT "#222222"
#define COLOR_POSITION "#6a3d9a"
#define COLOR_POSITION_FILL "#d8cbe6"

/* The price chart with a mark at each trade's entry and exit (the first VP_REPORT_MAX_MARKED). */
static vp_status write_price(FILE* out, const vp_report* r) {
    const int64_t nt = r->trades ? (r->n_trades < VP_REPORT_MAX_MARKED ? r->n_trades : VP_REPORT_MAX_MARKED) : 0;
    vp_svg_marker* mk = nt ? (vp_svg_marker*)malloc(sizeof *mk * 2 * (size_t)nt) : NULL;
    VP_REQUIRE(mk || nt == 0, VP_ERR_OOM, "report: no memory for %lld trade marks", (long long)nt);
    int64_t m = 0;
    for (int64_t i = 0; i < nt; ++i) {
        const vp_report_trade* t = &r->trades[i];
        if (t->entry >= 0 && t->entry < r->n)
            mk[m++] = (vp_svg_marker){r->times_ms[t->entry], t->entry_price, t->side > 0 ? 0 : 1,
                                      t->side > 0 ? COLOR_LONG : COLOR_SHORT};
        if (t->exit >= 0 && t->exit < r->n) mk[m++] = (vp_svg_marker){r->times_ms[t->exit], t->exit_price, 2, COLOR_EXIT};
    }
    vp_svg_series s = {r->price, COLOR_PRICE, NULL, "close"};
    vp_svg_chart c = {r->times_ms, r->n, &s, 1, 300, VP_METRIC_UNIT_RATIO, 0, "price and trades", 0, 0, mk, m};
    fputs("<h2>Price and trades</h2>\n", out);
    vp_status st = vp_svg_chart_write(out, &c);
    free(mk);
    fprintf(out, "<p class=\"note\">Entries: a green triangle up for a long, a red one down for a short, at the fill "
            "price; exits: a dark circle. %lld trade%s", (long long)r->n_trades, r->n_trades == 1 ? "" : "s");
    if (r->n_trades > nt) fprintf(out, ", the first %lld marked", (long long)nt);
    fputs(".</p>\n", out);
    return st;
}

vp_status vp_report_market_write(FILE* out, const vp_report* r) {
    if (r->price) VP_TRY(write_price(out, r));
    if (!r->position) return VP_OK;
    vp_svg_series s = {r->position, COLOR_POSITION, COLOR_POSITION_FILL, "contracts held"};
    vp_svg_chart c = {r->times_ms, r->n, &s, 1, 200, VP_METRIC_UNIT_RATIO, 1, "exposure", 0, 0, NULL, 0};
    fputs("<h2>Exposure</h2>\n", out);
    VP_TRY(vp_svg_chart_write(out, &c));
    fputs("<p class=\"note\">Contracts held at each close: above 0 long, below 0 short.</p>\n", out);
    return VP_OK;
}
