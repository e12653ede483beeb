/* Internal: what a training run writes into its folder besides checkpoints — the events
 * of metrics.jsonl and summary.json (train_report.c). */
#ifndef VP_LEARN_TRAIN_REPORT_H
#define VP_LEARN_TRAIN_REPORT_H

#include "vulpes/algo.h"

/* Wall-clock figures of one log interval (kept out of the deterministic events). */
typedef struct vp_train_timing {
    double wall_s;             /* seconds since the run (this process) started */
    double iterations_per_s;   /* over the last log interval */
    double env_steps_per_s;    /* over the last log interval */
    double learner_steps_per_s; /* over the last log interval */
} vp_train_timing;

/* "run": the data, spans and sizes of the run (the algorithm's info); `resumed` 1 when continuing. */
vp_status vp_train_log_run(vp_metrics_log* m, const vp_algo* a, int resumed);

/* "train": the counters, then the algorithm's statistics `st` (deterministic). */
vp_status vp_train_log_train(vp_metrics_log* m, const vp_algo* a, const vp_kv_list* st);

/* "timing": wall-clock rates (the only event that differs between identical runs). */
vp_status vp_train_log_timing(vp_metrics_log* m, const vp_algo* a, const vp_train_timing* tm);

/* "eval": a validation's metrics and whether it is the best so far. */
vp_status vp_train_log_eval(vp_metrics_log* m, const vp_algo* a, const vp_eval_result* r, int best);

/* "checkpoint": a checkpoint file written and why ("periodic", "best", "final", "interrupt"). */
vp_status vp_train_log_checkpoint(vp_metrics_log* m, const vp_algo* a, const char* file, const char* reason);

struct cJSON;

/* summary.json's object into *out (cJSON*, caller deletes): counters, best validation, and
 * when `finished` the final validation (the test span's object is the caller's to add). */
vp_status vp_train_summary_json(const vp_algo* a, const vp_train_result* res, int finished, struct cJSON** out);

/* Writes a summary object to `path` atomically, indented, with a final newline. */
vp_status vp_train_summary_write(const char* path, const struct cJSON* root);

/* The test span's result from its exact backtest r (one window): into out. */
void vp_train_test_result(const vp_rollout_result* r, vp_eval_result* out);

#endif /* VP_LEARN_TRAIN_REPORT_H */
