/* The data checks of a backtest: what it reads against what the checkpoint was trained on.
 * Notices say what differs without changing the result's meaning (another file); warnings
 * say the result may mislead (other bar spacing, orders cut by the leverage limit, bars
 * seen in training); prices at another scale refuse the run unless it is forced. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eval/backtest_checks.h"

void vp_bt_note(vp_backtest_checks* c, const char* fmt, ...) {
    if (c->n_notes >= VP_BACKTEST_NOTES_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->n_notes++], VP_BACKTEST_NOTE_LEN, fmt, ap);
    va_end(ap);
}

/* Adds a few words to the heading's list of warnings. */
static void brief(vp_backtest_checks* c, const char* words) {
    const size_t n = strlen(c->brief);
    snprintf(c->brief + n, sizeof c->brief - n, "%s%s", n ? "; " : "", words);
}

/* An amount of money: whole units while they print short, else 3 significant digits. */
static const char* money(double x, char* buf, size_t n) {
    if (fabs(x) < 1e15) snprintf(buf, n, "%.0f", x);
    else snprintf(buf, n, "%.3g", x);
    return buf;
}

/* The identity notice: another file, the same file changed, or another market. */
static void check_identity(const vp_data_record* rec, const vp_data_record* now, vp_backtest_checks* c) {
    const int same_place = strcmp(rec->source, now->source) == 0;
    if (vp_data_record_same(rec, now)) {
        if (!same_place)
            vp_bt_note(c, "notice: the data %.200s holds the same bars as the training data %.200s (same content at "
                       "another path)", now->source, rec->source);
        return;
    }
    if (rec->kind == VP_DATA_FILE && now->kind == VP_DATA_FILE && same_place)
        vp_bt_note(c, "notice: %.300s is not the file the network was trained on: its content changed (now %lld bytes, "
                   "xxh64:%016llx; at training %lld bytes, xxh64:%016llx)", now->source, (long long)now->bytes,
                   (unsigned long long)now->hash, (long long)rec->bytes, (unsigned long long)rec->hash);
    else
        vp_bt_note(c, "notice: the data %.200s is not the training data %.200s", now->source, rec->source);
}

/* Whether a / b lies outside [1 / r, r]. */
static int apart(double a, double b, double r) { return !(a <= r * b && b <= r * a); }

vp_status vp_bt_check_data(const vp_data_record* rec, const vp_bt_seen* seen, const vp_config* cfg, int force,
                           vp_backtest_checks* c) {
    VP_REQUIRE(seen != NULL && cfg != NULL && c != NULL, VP_ERR_INVALID_ARG, "vp_bt_check_data: NULL argument");
    char a[80], b[48], interval[200] = "", scale[400] = "";
    c->recorded = rec != NULL;
    if (!rec) {
        vp_bt_note(c, "notice: the checkpoint holds no record of its training data (it was written by an earlier "
                   "vulpes): the bar interval, price scale and data identity checks cannot run");
    } else {
        check_identity(rec, &seen->data, c);
        // the bar interval: the network's features and episodes count bars, not time
        if (apart(seen->data.interval_s, rec->interval_s, VP_BT_INTERVAL_RATIO)) {
            vp_interval_words(seen->data.interval_s, a, sizeof a);
            vp_interval_words(rec->interval_s, b, sizeof b);
            snprintf(interval, sizeof interval, "the bars are %s apart, the network was trained on bars %s apart", a,
                     b);
            vp_bt_note(c, "WARNING: %s (median spacings of %g s and %g s): its features and episodes measure other "
                       "spans of time here", interval, seen->data.interval_s, rec->interval_s);
            snprintf(interval, sizeof interval, "bars %s apart, trained on %s", a, b);
            brief(c, interval);
        }
        // the price scale: a network trained on one does not read another
        const double ratio = seen->span_median_close / rec->train_median_close;
        if (apart(seen->span_median_close, rec->train_median_close, VP_BT_SCALE_RATIO)) {
            snprintf(scale, sizeof scale, "the prices are %.3gx the training's (median close %.6g over the span, %.6g "
                     "over the training span; the training data's closes ran from %.6g to %.6g)", ratio,
                     seen->span_median_close, rec->train_median_close, rec->close_min, rec->close_max);
            if (!force) {
                c->refused = 1;
                VP_FAIL(VP_ERR_INVALID_ARG, "refused: %s%s%s. A network trained on one price scale does not trade "
                        "another; backtest data at the training's scale, or give --force to run it anyway", scale,
                        interval[0] ? "; and " : "", interval);
            }
            vp_bt_note(c, "WARNING: %s; run anyway (--force)", scale);
            snprintf(a, sizeof a, "prices %.3gx the training's", ratio);
            brief(c, a);
        }
    }
    // the first order at full size against the leverage limit
    const vp_config_instrument* in = &cfg->instrument;
    const double notional = in->max_position * seen->first_close * in->multiplier;
    const double limit = in->max_leverage * in->initial_equity;
    if (in->max_leverage > 0 && notional > limit) {
        char m[3][40];
        vp_bt_note(c, "WARNING: at full size (instrument.max_position %g) the first bar's position is worth %s (close "
                   "%g x instrument.multiplier %g per contract), %.3gx the equity of %s; instrument.max_leverage %g "
                   "allows %s, so orders will be cut to the limit", in->max_position, money(notional, m[0], 40),
                   seen->first_close, in->multiplier, notional / in->initial_equity,
                   money(in->initial_equity, m[1], 40), in->max_leverage, money(limit, m[2], 40));
        snprintf(a, sizeof a, "full size is %.3gx equity, cut to %gx", notional / in->initial_equity, in->max_leverage);
        brief(c, a);
    }
    return VP_OK;
}

void vp_bt_check_span(const vp_backtest_span_info* si, vp_backtest_checks* c) {
    if (!si->overlap_known || si->train_bars + si->val_bars == 0) return;
    vp_bt_note(c, "WARNING: the result is in-sample: %lld of the %lld bars were seen in training (%lld train, %lld "
               "validation)", (long long)(si->train_bars + si->val_bars), (long long)si->n_bars,
               (long long)si->train_bars, (long long)si->val_bars);
}
