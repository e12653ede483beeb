/* The span of a `vulpes backtest`: bounds by bar index or time, the training run's split
 * recomputed over the data, --span and --from / --to, and the bars of the span the training run
 * trained and validated on. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "eval/backtest_checks.h"
#include "eval/backtest_span.h"
#include "vulpes/dataset.h"

vp_status vp_backtest_bar_of(const vp_bars* bars, const char* text, int64_t* index) {
    VP_REQUIRE(bars != NULL && text != NULL && index != NULL && text[0] != '\0', VP_ERR_INVALID_ARG,
               "vp_backtest_bar_of: NULL or empty argument");
    // a bar index: digits only, below 10^8 (Unix seconds start there)
    size_t n = strlen(text), digits = 0;
    while (digits < n && isdigit((unsigned char)text[digits])) ++digits;
    if (digits == n && n <= 8) {
        *index = strtoll(text, NULL, 10);
        VP_REQUIRE(*index <= bars->n, VP_ERR_INVALID_ARG, "bar %s is beyond the %lld bars of the data", text,
                   (long long)bars->n);
        return VP_OK;
    }
    // a time: the first bar at or after it
    int64_t ms = 0;
    VP_REQUIRE(vp_time_parse(text, n, &ms, NULL), VP_ERR_INVALID_ARG,
               "'%s' is neither a bar index nor a time (2017-06-01, 2017-06-01T12:00, Unix seconds)", text);
    int64_t lo = 0, hi = bars->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (bars->time_ms[mid] < ms) lo = mid + 1;
        else hi = mid;
    }
    *index = lo;
    return VP_OK;
}

/* Bars of [a, b) inside span s. */
static int64_t overlap_len(int64_t a, int64_t b, vp_span s) {
    const int64_t lo = a > s.begin ? a : s.begin, hi = b < s.end ? b : s.end;
    return hi > lo ? hi - lo : 0;
}

/* The training run's split of all the bars, as vp_train_data_load makes it; into si. */
static void training_split(const vp_config* cfg, const vp_bars* all, int64_t warm, vp_backtest_span_info* si) {
    si->split_fits = vp_train_data_split(cfg, all->n, warm, &si->split) == VP_OK;
    if (!si->split_fits) vp_clear_error();
}

/* A bound (--from: is_from 1, --to) into *index; a start after the last bar is refused naming
 * that bar. */
static vp_status span_bound(const vp_bars* all, int is_from, const char* text, int64_t* index) {
    VP_TRY(vp_backtest_bar_of(all, text, index));
    if (is_from && *index >= all->n && all->n > 0) {
        char t[32];
        return vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "--from %s is after the last bar, %s (bar %lld)", text,
                            vp_time_format_iso(all->time_ms[all->n - 1], t, sizeof t),
                            (long long)(all->n - 1));
    }
    return VP_OK;
}

vp_status vp_bt_resolve_span(const vp_config* cfg, const vp_bars* all, const vp_backtest_job* job, const char* data,
                             int same_data, vp_span* span, vp_backtest_span_info* si) {
    const int64_t warm = vp_train_data_warmup(cfg);
    training_split(cfg, all, warm, si);
    const char* kind = job->span ? job->span : (job->from || job->to) ? "all" : "test";

    // the base span
    if (strcmp(kind, "all") == 0) {
        span->begin = warm < all->n ? warm : 0;
        span->end = all->n;
        snprintf(si->source, sizeof si->source, "all bars after the feature warm-up");
    } else {
        const int which = strcmp(kind, "train") == 0 ? 0 : strcmp(kind, "val") == 0 ? 1 : strcmp(kind, "test") == 0 ? 2 : -1;
        VP_REQUIRE(which >= 0, VP_ERR_INVALID_ARG, "--span '%s': use train, val, test or all", kind);
        VP_REQUIRE(si->split_fits, VP_ERR_INVALID_ARG,
                   "%s the training run's %s span, but its split (split.train %g, split.val %g, split.test %g, "
                   "split.embargo %lld, %lld bars of feature warm-up) does not fit the %lld bars of %s; give "
                   "--from/--to or --span all",
                   job->span ? "--span asks for" : "the default span is", kind, cfg->split.train, cfg->split.val,
                   cfg->split.test, (long long)cfg->split.embargo, (long long)warm, (long long)all->n, data);
        const vp_span* sp[3] = {&si->split.train, &si->split.val, &si->split.test};
        *span = *sp[which];
        snprintf(si->source, sizeof si->source, "the training run's %s span", which == 0 ? "train" : which == 1 ? "val" : "test");
    }
    // --from / --to replace its bounds
    if (job->from) VP_TRY(span_bound(all, 1, job->from, &span->begin));
    if (job->to) VP_TRY(span_bound(all, 0, job->to, &span->end));
    if (job->from && job->to && !job->span) snprintf(si->source, sizeof si->source, "bars given by --from/--to");
    else if (job->from || job->to)
        snprintf(si->source + strlen(si->source), sizeof si->source - strlen(si->source), ", bounds from %s",
                 job->from && job->to ? "--from/--to" : job->from ? "--from" : "--to");
    VP_REQUIRE(span->end - span->begin >= 2, VP_ERR_INVALID_ARG,
               "the span [%lld, %lld) of the %lld bars holds fewer than 2 bars", (long long)span->begin,
               (long long)span->end, (long long)all->n);
    if (span->begin < warm)
        vp_bt_note(&si->checks, "WARNING: the span starts at bar %lld, before the %lld bars of feature warm-up: its "
                   "first features see less history than training's", (long long)span->begin, (long long)warm);

    // the bars the training run saw: only known when the data is its data and its split fits
    si->n_bars = vp_span_len(*span);
    si->overlap_known = same_data && si->split_fits;
    if (si->overlap_known) {
        si->train_bars = overlap_len(span->begin, span->end, si->split.train);
        si->val_bars = overlap_len(span->begin, span->end, si->split.val);
    } else {
        snprintf(si->unknown_why, sizeof si->unknown_why, "%s",
                 !same_data ? (si->checks.recorded ? "the data is not the bars the training run was trained on"
                                                   : "the data is not the training run's data.path")
                            : "the training run's split does not fit this data");
    }
    return VP_OK;
}

