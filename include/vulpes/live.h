/* vulpes: live decisions — a checkpoint opened on the CPU, fed raw bars one at a time, deciding
 * at each bar's close what to hold over the next bar.
 *
 * A handle keeps everything the next decision needs and nothing more: the feature stream
 * (the library's features stepped one bar at a time, equal to the batch matrix over the same
 * bars), the ATR, a ring of the encoder rows of the last K bars (a new bar costs its trunk and
 * in_proj rows, then the Mamba2 mixer over the K cached rows and the heads), and the account the
 * decisions imply: the exact backtest's own step (fills at the next open, stops and targets
 * against the next bar's range, costs, the leverage limit, the ruin rule) carried bar to bar
 * from a flat account at initial equity. Decisions start at the feature warm-up bar, as
 * `vulpes backtest --span all` does, so over the bars of a file they are that backtest's
 * decisions (choices and Q values bit for bit on the CPU) wherever the backtest's window does
 * not yet see its own end (the last env.episode_bars bars of a span close it out early; a live
 * account never ends: its time left reads 1). docs/live.md has the details. */
#ifndef VULPES_LIVE_H
#define VULPES_LIVE_H

#include <stdint.h>

#include "vulpes/decision.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A live handle (opaque). */
typedef struct vp_live vp_live;

/* How to open a checkpoint; start from vp_live_opts_default(). */
typedef struct vp_live_opts {
    int force;                   /* 1: decide despite the data checks' refusal (prices at another scale) */
    double bars_per_year;        /* bars in a year, for the financing rates per bar (0: the training data's bar
                                    interval, 365.25 days over it; only read when a financing rate is set) */
    int n_overrides;             /* entries of overrides */
    const char* const* overrides; /* [n_overrides] KEY=VALUE for instrument.*, data.price_side or
                                    metrics.risk_free_rate (as vulpes act), or NULL */
} vp_live_opts;

/* Defaults: no force, bars per year from the training data, no overrides. */
vp_live_opts vp_live_opts_default(void);

/* One raw bar, as the CSV loader reads a row. */
typedef struct vp_live_bar {
    int64_t time_ms;  /* bar open time, Unix milliseconds UTC; strictly after the previous bar's */
    double open;      /* price units, > 0, within [low, high] */
    double high;      /* price units */
    double low;       /* price units, > 0 */
    double close;     /* price units, within [low, high] */
    double volume;    /* >= 0 (0 when the feed has none) */
    int has_spread;   /* 1: spread holds this bar's bid-ask spread; 0: the instrument's spread_ticks apply */
    double spread;    /* price units, finite, >= 0 (read when has_spread) */
} vp_live_bar;

/* Parses one CSV line, time,open,high,low,close[,volume[,spread]] (no header; the time in
 * any form the CSV loader reads, numbers as it reads them), into *out; a wrong field count, a
 * bad time or a number that is not one or not finite fails naming line `line_no` and the field. */
vp_status vp_live_parse_csv(const char* line, int64_t line_no, vp_live_bar* out);


/* Opens checkpoint `path` (a training run's best.safetensors or last.safetensors) on the
 * CPU into *out: its config (with opts' overrides), its network and parameters, and the data
 * checks' record of its training data. Free with vp_live_close. opts NULL: defaults. */
vp_status vp_live_open(vp_live** out, const char* path, const vp_live_opts* opts);

/* Frees a handle (NULL is a no-op). */
void vp_live_close(vp_live* h);

/* Bars of history before the first decision: decisions start at the bar of this index. */
int64_t vp_live_warmup(const vp_live* h);

/* Bars taken so far. */
int64_t vp_live_bars(const vp_live* h);

/* Takes the next bar: steps the account through the previous decision over it, then decides
 * at its close into *out and sets *decided to 1; during the warm-up *decided is 0 and *out
 * is not written. A bad bar (a field not finite or out of range, a time not after the
 * previous one) fails naming the bar and the field and changes nothing: the handle takes the
 * next bar as if it had not been offered. At the first decision the data checks run (price
 * scale, bar interval, the first order's leverage, against the training data's record): a
 * refusal fails the same way (opts.force decides anyway). After a closing-out decision the
 * account is closed and every later bar fails (VP_ERR_STATE). */
vp_status vp_live_push(vp_live* h, const vp_live_bar* bar, vp_decision* out, int* decided);

/* The checks' notices and warnings so far ("WARNING: ...", "notice: ..."): their count, and
 * note i (0 <= i < count; NULL outside). */
int vp_live_n_notes(const vp_live* h);
const char* vp_live_note(const vp_live* h, int i);

/* The decision as one JSON object, the fields `vulpes act` prints (docs/backtest.md), with
 * the checkpoint's path, "data": null and the handle's notes as warnings; *text is
 * malloc'ed (caller frees), compact (pretty 0) or indented (pretty 1). */
vp_status vp_live_decision_json(const vp_live* h, const vp_decision* d, int pretty, char** text);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_LIVE_H */
