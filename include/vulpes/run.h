/* vulpes: the run folder and what a run writes while it goes (SPEC section 1).
 *
 * - Atomic files: written to NAME.tmp, flushed to disk (fsync), renamed over NAME, so a
 *   crash leaves either the old file or the new one, never half of one. Checkpoints,
 *   summary.json and config.yaml are written this way.
 * - The run folder: `--out DIR`, else runs/YYYYmmdd-HHMMSS-NAME. A folder that exists and
 *   is not empty is refused unless forced (the earlier run's files are then moved aside,
 *   never deleted); a folder being written is locked (DIR/.lock) against other commands. config.yaml (the resolved configuration) is
 *   written when it opens; metrics.jsonl is appended to while the run goes.
 * - metrics.jsonl: one JSON object per line and log event, flushed per line, with the
 *   unit in every key's name (iteration, env_steps, learner_steps, loss, loss_c51,
 *   loss_iqn, q_mean, grad_norm, epsilon, env_steps_per_s, wall_s, val_sharpe, ...);
 *   beside it, events.out.tfevents.metrics holds the same numbers as TensorBoard scalars.
 * - Progress: one updating line on a terminal, plain periodic lines otherwise, printed to
 *   the FILE* the caller gives (the library never prints on its own). */
#ifndef VULPES_RUN_H
#define VULPES_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "vulpes/config.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest path a run keeps, terminating NUL included. */
#define VP_RUN_PATH_MAX 1024

/* ---- atomic files --------------------------------------------------------------------------- */

/* A file being written atomically: `f` writes PATH.tmp until commit renames it to PATH. */
typedef struct vp_atomic_file {
    FILE* f;                      /* the temporary file; write through it */
    char path[VP_RUN_PATH_MAX];   /* final name */
    char tmp[VP_RUN_PATH_MAX + 8]; /* PATH.tmp */
} vp_atomic_file;

/* Opens PATH.tmp for writing (truncating any left over from a crash). */
vp_status vp_atomic_file_open(vp_atomic_file* a, const char* path);

/* Flushes, fsyncs and closes the temporary file, renames it to PATH and fsyncs the folder.
 * On failure the temporary file is removed and PATH is left as it was. */
vp_status vp_atomic_file_commit(vp_atomic_file* a);

/* Closes and removes the temporary file; PATH is left as it was (safe after commit). */
void vp_atomic_file_abort(vp_atomic_file* a);

/* Writes data[n] to `path` atomically. */
vp_status vp_file_write_atomic(const char* path, const void* data, size_t n);

/* Writes `cfg` as YAML (vp_config_to_yaml) to `path` atomically; the io layer's side of
 * the configuration, so config itself never writes files. */
vp_status vp_config_write_yaml(const vp_config* cfg, const char* path);

/* ---- metrics.jsonl --------------------------------------------------------------------------- */

/* A JSON-lines writer: begin an event, add fields, end writes the line and flushes it. */
typedef struct vp_metrics_log {
    FILE* f;                    /* the open file */
    void* event;                /* the object being built (a cJSON*), NULL between events */
    int64_t lines;              /* lines written since open */
    char path[VP_RUN_PATH_MAX]; /* for messages */
    FILE* events;               /* the TensorBoard event file beside it, events.out.tfevents.STEM */
    int64_t line_index;         /* index in the file of the next line (the lines before an append counted) */
} vp_metrics_log;

/* Opens `path` for writing (`append` 0: truncated, 1: appended to), and beside it the
 * TensorBoard event file events.out.tfevents.STEM (STEM.jsonl the metrics file's name),
 * written anew: its version record, then (append) one Event per line already in the file,
 * so that it always mirrors the lines (docs/train.md, "TensorBoard"). */
vp_status vp_metrics_log_open(vp_metrics_log* m, const char* path, int append);

/* Starts an event; its first field is "event": `event` ("train", "eval", "checkpoint"). */
vp_status vp_metrics_log_begin(vp_metrics_log* m, const char* event);

/* Adds an integer field (exact up to 2^53). A key may appear once per event. */
vp_status vp_metrics_log_int(vp_metrics_log* m, const char* key, int64_t value);

/* Adds a number field; NaN and infinities are written as null. */
vp_status vp_metrics_log_num(vp_metrics_log* m, const char* key, double value);

/* Adds a string field. */
vp_status vp_metrics_log_str(vp_metrics_log* m, const char* key, const char* value);

/* Writes the event as one line and flushes it, and its Event to the event file. */
vp_status vp_metrics_log_end(vp_metrics_log* m);

/* Closes the file (an unfinished event is dropped). NULL and closed writers are no-ops. */
void vp_metrics_log_close(vp_metrics_log* m);

/* ---- the run folder ----------------------------------------------------------------------------- */

/* How vp_run_open treats an existing folder. */
typedef enum vp_run_mode {
    VP_RUN_CREATE = 0, /* a new run: the folder must be absent or empty */
    VP_RUN_FORCE,      /* a new run over an old one: its run files are moved aside first */
    VP_RUN_RESUME,     /* continue a run: config.yaml must be there; metrics are appended */
    VP_RUN_MODE_COUNT
} vp_run_mode;

/* An open run folder. While claimed, the process holds an exclusive lock (flock) on
 * DIR/.lock, which holds its pid; another claim of the folder is refused. */
typedef struct vp_run {
    char dir[VP_RUN_PATH_MAX]; /* the folder, as given */
    vp_metrics_log metrics;    /* DIR/metrics.jsonl (open after vp_run_begin) */
    vp_run_mode mode;          /* how it was claimed */
    int lock_fd;               /* the open DIR/.lock (valid while `locked`) */
    int locked;                /* 1: this vp_run holds the folder's lock */
} vp_run;

/* NAME of a run from a config path: its file name without folder and extension
 * ("examples/eurusd.yaml" -> "eurusd"; NULL or empty -> "run"); written into out[n]. */
const char* vp_run_name_from_path(const char* config_path, char* out, size_t n);

/* The default folder runs/YYYYmmdd-HHMMSS-NAME for local time `when` under `root`
 * ("runs"), with -2, -3, ... appended when that folder already exists; into out[n]. */
vp_status vp_run_dir_default(char* out, size_t n, const char* root, const char* name, time_t when);

/* Claims the run folder `dir` for `mode` and checks it, changing nothing in it but the lock:
 * CREATE and FORCE make the folder (with its parents) when absent, RESUME needs it with its
 * config.yaml; then the lock DIR/.lock is taken (refused with "run folder DIR is in use by
 * another vulpes process (pid N)" while another holds it; a stale one is taken over), and
 * CREATE refuses a non-empty folder (the lock aside; the message names it and --force). */
vp_status vp_run_claim(vp_run* r, const char* dir, vp_run_mode mode);

/* Starts writing a claimed folder: FORCE moves the files an earlier run wrote (config.yaml,
 * metrics.jsonl, last/best.safetensors, summary.json, trades.csv, equity.csv, report.html,
 * walkforward.json, folds/, events.out.tfevents.metrics, and their .tmp) into a new
 * DIR/replaced-N (deleting nothing and leaving every other file alone); CREATE and FORCE write `cfg` to config.yaml and truncate
 * metrics.jsonl; RESUME (cfg may be NULL) appends to metrics.jsonl. */
vp_status vp_run_begin(vp_run* r, const vp_config* cfg);

/* vp_run_claim then vp_run_begin (the run is closed again when begin fails). */
vp_status vp_run_open(vp_run* r, const char* dir, vp_run_mode mode, const vp_config* cfg);

/* DIR/file into out[n]. */
vp_status vp_run_path(const vp_run* r, const char* file, char* out, size_t n);

/* Closes the metrics file and releases the lock (removing DIR/.lock); a no-op on a run
 * that holds neither. */
void vp_run_close(vp_run* r);

/* ---- progress ---------------------------------------------------------------------------------- */

/* What the training loop reports at an update. NaN fields are shown as "-". */
typedef struct vp_progress_stats {
    int64_t iteration;     /* iterations done (of the fold, in a walk-forward) */
    int64_t env_steps;     /* env steps done, summed over envs (over every fold, in a walk-forward) */
    int64_t learner_steps; /* learner steps done */
    double loss;           /* last logged loss */
    double epsilon;        /* current exploration rate */
    double val_sharpe;     /* last validation Sharpe (NaN before the first) */
} vp_progress_stats;

/* Where a walk-forward stands, for its progress line (vp_progress_update_folds). */
typedef struct vp_progress_folds {
    int64_t fold;            /* the fold whose figures are shown, numbered from 1 */
    int64_t n_folds;         /* folds planned */
    int64_t done;            /* folds finished (by earlier calls too) */
    int64_t running;         /* folds training now */
    int64_t fold_iterations; /* iterations of one fold (train.iterations) */
    int64_t work;            /* iterations done over every fold of this call: what the ETA counts */
} vp_progress_folds;

/* Where a training loop sends its progress instead of its own line (a walk-forward's line over
 * its folds): the figures after every iteration, and notes on lines of their own. */
typedef struct vp_progress_sink {
    void (*update)(void* ctx, const vp_progress_stats* st); /* after every iteration (throttled by the sink) */
    void (*note)(void* ctx, const char* msg);               /* a message on a line of its own */
    void* ctx;                                              /* their first argument */
} vp_progress_sink;

/* Seconds of projected run time on the CPU above which a run counts as GPU-sized
 * (vp_progress_cpu_advice): 15 minutes. */
#define VP_PROGRESS_CPU_LIMIT_S 900.0

/* Timed iterations after which the CPU projection is made (sooner when 5 s have passed). */
#define VP_PROGRESS_CPU_MEASURE 3

/* The progress printer. Rates and the ETA count from init, or from the last rebase (after
 * the first iteration, so graph capture and warm-up do not count), so a resumed run's
 * figures are its own. The unit of work is an iteration: of the run for training, of every
 * fold together for a walk-forward. */
typedef struct vp_progress {
    FILE* out;             /* where lines go (the CLI passes stderr) */
    int tty;               /* 1: one line redrawn with '\r'; 0: a line per print */
    int64_t total;         /* iterations planned (work units) */
    double interval_s;     /* least seconds between prints (the final one always prints) */
    double t_start;        /* time of init or of the last rebase, seconds */
    double t_init;         /* time of init (the elapsed time counts from it) */
    int64_t iter_start;    /* work done at init or at the last rebase */
    int64_t work_init;     /* work done at init (a resumed run's starting iteration) */
    double t_print;        /* time of the last print (t_start before the first) */
    int64_t env_print;     /* env steps at the last print (at init before the first) */
    int printed;           /* prints so far */
    int last_len;          /* characters of the drawn terminal line (to blank leftovers) */
    int warn_cpu;          /* 1: the work runs on the CPU: warn once when it projects past VP_PROGRESS_CPU_LIMIT_S */
    int warned;            /* the CPU projection was made (warned or not) */
} vp_progress;

/* Starts progress at time `now_s` towards `total` iterations from `start` (the counters a
 * resumed run starts from; NULL: zero). `tty` 1 draws one updating line (the CLI passes
 * isatty(fileno(out))); `interval_s` is the least time between prints (0: every update). */
void vp_progress_init(vp_progress* p, FILE* out, int tty, int64_t total, double interval_s, double now_s,
                      const vp_progress_stats* start);

/* Restarts the rate and ETA clock at time now_s with `work` iterations and `env_steps` done
 * (after the first, untimed iteration); the elapsed time still counts from init. */
void vp_progress_rebase(vp_progress* p, int64_t work, int64_t env_steps, double now_s);

/* Reports `st` at time `now_s`; prints at the first update, when interval_s has passed since
 * the last print, and at the last iteration; with warn_cpu, makes the CPU projection once
 * after VP_PROGRESS_CPU_MEASURE timed iterations (or 5 s) and prints its warning when the
 * run is GPU-sized. Returns 1 when it printed. */
int vp_progress_update(vp_progress* p, const vp_progress_stats* st, double now_s);

/* vp_progress_update for a walk-forward: the line starts with the fold and the folds done,
 * `st` holds the shown fold's iteration and the summed env steps, the ETA counts f->work. */
int vp_progress_update_folds(vp_progress* p, const vp_progress_stats* st, const vp_progress_folds* f, double now_s);

/* Prints a message on a line of its own without garbling the progress line. */
void vp_progress_note(vp_progress* p, const char* msg);

/* Ends the terminal line (a newline after the last '\r' line); no-op otherwise. */
void vp_progress_finish(vp_progress* p);

/* The CPU warning for a run measured at s_per_iteration seconds an iteration (over `measured`
 * iterations) that plans `iterations` in all: when s_per_iteration x iterations exceeds
 * VP_PROGRESS_CPU_LIMIT_S (the definition of a GPU-sized config) writes the warning, naming
 * the measured time, the projected total and examples/eurusd.yaml, into buf[n] and returns 1;
 * else writes "" and returns 0. */
int vp_progress_cpu_advice(double s_per_iteration, int64_t measured, int64_t iterations, char* buf, size_t n);

/* Appends printf text to buf[n] at offset *k, truncating, never past n (*k then equals n). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void vp_text_append(char* buf, size_t n, size_t* k, const char* fmt, ...);

/* `one` when n is 1 (or -1), else `many`: "1 fold", "2 folds". */
const char* vp_plural(int64_t n, const char* one, const char* many);

/* Monotonic seconds (for now_s). */
double vp_clock_s(void);

/* `v` with a k / M / G suffix ("4.92M") into buf[n]. */
const char* vp_format_count(double v, char* buf, size_t n);

/* Seconds as "45s", "3m12s", "2h05m", "3d04h" into buf[n] ("-" when negative or NaN). */
const char* vp_format_duration(double s, char* buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_RUN_H */
