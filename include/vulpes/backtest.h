/* vulpes: the backtest's outputs (SPEC section 7): a rollout of a trained agent over bars it
 * has not seen (vulpes/rollout.h) written as trades.csv, equity.csv, summary.json and
 * report.html; the `vulpes backtest` job; `vulpes act`'s decision for the bar after the
 * last one; the end-of-training test-span backtest.
 * docs/backtest.md has the details and the outputs' columns. */
#ifndef VULPES_BACKTEST_H
#define VULPES_BACKTEST_H

#include <stdint.h>
#include <stdio.h>

#include "vulpes/config.h"
#include "vulpes/data_record.h"
#include "vulpes/rollout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs model `m` greedily with parameters `params` ([n_weights], backend memory; both may be
 * NULL when cfg->forced_actions is set) over data->span: vp_rollout_run with the model's
 * policy (vp_model_policy). Free *out with vp_rollout_result_free, also after a failure. */
vp_status vp_backtest_run(vp_backend* b, const vp_model* m, const vp_tensor* params /* [n_weights] */,
                          const vp_rollout_data* data, const vp_rollout_cfg* cfg, vp_rollout_result* out);

/* Most warnings and notices one backtest's data checks give, and the bytes of one. */
#define VP_BACKTEST_NOTES_MAX 8
#define VP_BACKTEST_NOTE_LEN 512

/* What the checks of a backtest's data against the checkpoint's record of its training data
 * found (docs/backtest.md, "Data checks"). */
typedef struct vp_backtest_checks {
    char data[VP_CONFIG_STR_MAX]; /* the bar file or market the backtest read */
    int from_record;     /* 1: no --data was given: the training data the checkpoint recorded, unchanged */
    int recorded;        /* 1: the checkpoint records its training data (0: an older one; fewer checks ran) */
    int refused;         /* 1: a check refused the run (prices at another scale); force runs it anyway */
    int n_notes;         /* entries of notes */
    char notes[VP_BACKTEST_NOTES_MAX][VP_BACKTEST_NOTE_LEN]; /* [n_notes] "WARNING: ..." and "notice: ..." */
    char brief[256];     /* the warnings in a few words, for the report's heading ("" when none) */
} vp_backtest_checks;

/* Which bars a `vulpes backtest` ran, how many of them the training run saw, and what the checks
 * of its data against the training data found. */
typedef struct vp_backtest_span_info {
    char source[96];    /* how the span was chosen: "the training run's test span", "--from/--to", ... */
    int split_fits;     /* 1: the training run's split (config split.*) fits the data; split holds it */
    vp_split split;     /* the training run's train / val / test spans over the data (when split_fits) */
    int overlap_known;  /* 1: the data is the training run's (same content) and its split fits: counts below hold */
    int64_t n_bars;     /* bars of the backtested span */
    int64_t train_bars; /* of them, bars inside the training run's train span (when overlap_known) */
    int64_t val_bars;   /* of them, bars inside its validation span (when overlap_known) */
    char unknown_why[160]; /* why the overlap is unknown (when !overlap_known) */
    vp_backtest_checks checks; /* the data checks (filled also when they refuse the job); their notes go into
                                  summary.json's "warnings" array, after any it already holds */
} vp_backtest_span_info;

/* What the output files say besides the result. */
typedef struct vp_backtest_info {
    const char* title;       /* report heading (NULL: "backtest") */
    const char* checkpoint;  /* the checkpoint's path (NULL: none) */
    const char* data;        /* the bar file or market (NULL: none) */
    const char* config_text; /* the run's resolved config (NULL: none) */
    const vp_bars* bars;     /* the bars the result's indices point into (times of trades and points) */
    const vp_backtest_span_info* span_info; /* the span's source and overlap with training (NULL: none) */
    double tick_size;        /* trades.csv prints prices with the tick's decimals (0: exact, 15-17 digits) */
    int64_t selection_trials; /* validations the parameters were selected among (< 2: the report says nothing) */
    double deflated_sharpe;  /* deflated Sharpe of that selection (report header) */
} vp_backtest_info;

/* Writes trades.csv, equity.csv, summary.json and report.html into folder `dir` (made when
 * absent), each atomically. */
vp_status vp_backtest_write(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir);

/* Writes trades.csv, equity.csv and report.html into folder `dir` (made when absent), each
 * atomically: what vp_backtest_write writes but summary.json, for a caller with its own. */
vp_status vp_backtest_write_files(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir);

/* Writes only summary.json's object into *out (cJSON*, caller deletes): the status ("ok" or
 * "ruined") and the ruin, the span, the mode, the annualisation, the metrics, the fragile
 * decisions, the decision after the span, and the per-window table in the segment mode. */
vp_status vp_backtest_summary_json(const vp_rollout_result* r, const vp_backtest_info* info, struct cJSON** out);

/* Prints the result for people to out: a RUINED line with the bar and its time before any
 * figure (the strategy's, then buy-and-hold's), the metrics table (vp_metrics_print), marked
 * before and after as a ruined run's when it ruined, the fragile decisions and the decision
 * for the bar after the span. */
vp_status vp_backtest_print(const vp_rollout_result* r, FILE* out);

/* ---- the `vulpes backtest` job: a checkpoint over a bar file --------------------------------- */

/* Whether a backtest may set config key `name` for itself (every instrument.* key,
 * data.price_side, metrics.risk_free_rate: costs, contract and measurement, not the network). */
int vp_backtest_key_overridable(const char* name);

/* The training run's config and the record of its data (*has_rec: whether the checkpoint has
 * one) from checkpoint `path`'s metadata, with `overrides` applied ([n_overrides] "KEY=VALUE",
 * only the keys vp_backtest_key_overridable allows; `who` names the caller in a refusal, e.g.
 * "a backtest"), then checked. What `vulpes backtest`, `vulpes act` and the live API read. */
vp_status vp_backtest_checkpoint_config(const char* path, char* const* overrides, int n_overrides, const char* who,
                                        vp_config* cfg, vp_data_record* rec, int* has_rec);

/* What to run. The network, instrument, episode length and feature settings come from the
 * config in the checkpoint's metadata (its train.algo's policy); features and ATR are computed
 * from bars before the span's end only (warm-up from before the span). */
typedef struct vp_backtest_job {
    const char* checkpoint; /* a checkpoint of a training run (best.safetensors, last.safetensors) */
    const char* data;       /* CSV bar file or synth:KIND[:...] market; NULL: the checkpoint config's data.path */
    const char* from;       /* first decision bar, replacing the span's: ISO date / date-time (first bar at
                               or after it) or a bar index below 10^8; NULL: the span's */
    const char* to;         /* end of the span, exclusive, same forms; NULL: the span's */
    const char* out;        /* output folder; NULL: runs/YYYYmmdd-HHMMSS-backtest */
    int force;              /* 1: run despite the data checks' refusals, and reuse a non-empty output folder
                               (its run files are replaced) */
    int64_t n_windows;      /* 1: exact sequential path; N > 1: segment-parallel (see vp_rollout_cfg) */
    int fused;              /* see vp_rollout_cfg.fused */
    const char* span;       /* "train", "val", "test" (the training run's split of the data, recomputed from
                               the checkpoint's config) or "all" (every bar after the feature warm-up);
                               NULL: "test", or "all" when from or to is given */
    vp_backtest_span_info* span_info; /* receives the span's source, overlap and data checks, the checks also when
                                         the job fails (NULL: not wanted) */
    int n_overrides;        /* entries of `overrides` */
    char* const* overrides; /* [n_overrides] "KEY=VALUE" for the keys vp_backtest_key_overridable allows: costs,
                               contract and measurement for this backtest only (the network keeps what it was
                               trained with); any other key is refused */
} vp_backtest_job;

/* Runs a job on backend b: loads the checkpoint and the bars, checks the bars against the
 * checkpoint's record of its training data (bar interval, price scale, the first order's
 * leverage, the file's identity, bars seen in training: warnings and notices; prices at
 * another scale refuse the run unless job->force), runs the backtest, writes config.yaml,
 * metrics.jsonl (one "backtest" event), trades.csv, equity.csv, summary.json (with the
 * checks' "warnings") and report.html into the output folder (its path into out_dir[cap]),
 * and leaves the result in *out (free with vp_rollout_result_free). A refused or failed job
 * makes no folder. */
vp_status vp_backtest_job_run(vp_backend* b, const vp_backtest_job* job, vp_rollout_result* out, char* out_dir,
                              size_t cap);

/* The last bar of a job's span: what the decision for the bar after it is read against. */
typedef struct vp_backtest_last_bar {
    vp_instrument instrument; /* the instrument the rollout stepped under (the job's overrides applied) */
    int64_t bar;              /* the span's last bar (span.end - 1) */
    int64_t time_ms;          /* its time stamp (its open time, as in the data), Unix ms */
    double close;             /* its close */
    double atr;               /* the ATR known at its close (the training run's ATR) */
} vp_backtest_last_bar;

/* Runs a job's rollout as vp_backtest_job_run does (the same loading, data checks, span and
 * rollout) but writes nothing and makes no folder (job->out is not read); *last receives the
 * span's last bar. Free *out with vp_rollout_result_free, also after a failure. */
vp_status vp_backtest_job_rollout(vp_backend* b, const vp_backtest_job* job, vp_rollout_result* out,
                                  vp_backtest_last_bar* last);

/* ---- `vulpes act`: the decision for the bar after the last one, as JSON ---------------------- */

/* Decimals of a tick size (0.00001: 5, 0.25: 2, 1: 0); -1 for none or more than 10: prices in
 * trades.csv, equity.csv and `vulpes act` are written at this precision. */
int vp_tick_decimals(double tick);

/* The decision object of result r (a rollout whose last window ends at last->bar: its choice,
 * margin and scores for the bar after it) into *out (cJSON*, caller deletes): checkpoint and
 * data (the given texts), bar, time, decision_for, direction ("short", "flat", "long"),
 * size_fraction (the size branch's choice, 0.25 .. 1), contracts (the target position's size;
 * 0 when flat), take_profit and stop_loss ({atr_multiple: the branch's choice 0 .. 2, price:
 * last close +- atr_multiple x ATR on the chosen side, at the tick's decimals; null when none,
 * flat or not above 0}), q (the scores of every choice per branch), q_margin, fragile (q_margin
 * < VP_ACTION_FRAGILE_MARGIN), atr, last_close and warnings (checks' notes, then a fragile
 * decision's). Fails naming the bar when the last window has no decision (a ruin, forced
 * actions). docs/backtest.md, "vulpes act", has the fields. */
vp_status vp_act_json(const vp_rollout_result* r, const vp_backtest_last_bar* last, const char* checkpoint,
                      const char* data, const vp_backtest_checks* checks, struct cJSON** out);

/* Resolves a span bound against bars: a bar index (all digits, below 10^8) as is, else a
 * time (vp_time_parse forms) as the first bar at or after it (n when none); into *index. */
vp_status vp_backtest_bar_of(const vp_bars* bars, const char* text, int64_t* index);

/* ---- the end of a training run --------------------------------------------------------------- */

struct vp_train_end;

/* A vp_train_finish_fn (vulpes/train.h) for vp_train_opts.finish: writes the test span's
 * exact backtest (end->test) as trades.csv, equity.csv and report.html into end->run_dir and
 * adds its description ("backtest": mode, span, checkpoint, ...; "timing") to summary.json's
 * "test" object (cJSON*). ctx: NULL, or a vp_metrics_summary* that receives the metrics. */
vp_status vp_backtest_train_finish(void* ctx, const struct vp_train_end* end, struct cJSON* test);

/* Adds the description of result r to a summary object (cJSON*) holding its metrics: the
 * "status" ("ok", or "ruined", which also replaces the status of a ruined series' metrics),
 * "ruin" and "buy_and_hold_ruin" (null when none), the "backtest" object (mode, windows,
 * path, checkpoint, data, span, decisions, trades, ruin rule), "fragile_decisions",
 * "next_decision", the wall-clock "timing", and the per-window table in the segment mode. */
vp_status vp_backtest_summary_add(const vp_rollout_result* r, const vp_backtest_info* info, struct cJSON* obj);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_BACKTEST_H */
