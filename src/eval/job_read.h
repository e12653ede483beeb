/* Internal: a multi-run job's folders read back (an ablation's, a search's): a whole file, a
 * run's summary.json and its figures as summary.json writes them, and a resume's check that
 * the job folder's config.yaml is the base. */
#ifndef VP_EVAL_JOB_READ_H
#define VP_EVAL_JOB_READ_H

#include "vulpes/config.h"
#include "vulpes/status.h"

struct cJSON;

/* The whole file dir/file, NUL-terminated (caller frees); NULL when unreadable. */
char* vp_job_read_text(const char* dir, const char* file);

/* The summary.json of run folder dir (caller deletes); NULL when missing or not JSON. */
struct cJSON* vp_job_summary(const char* dir);

/* Member `key` of obj as summary.json writes a figure: a number, "inf" / "-inf", or null or
 * absent (NaN; obj may be NULL). */
double vp_job_figure(const struct cJSON* obj, const char* key);

/* A resume's check: the config.yaml of job folder dir is base (run.* aside); else
 * VP_ERR_INVALID_ARG "cannot resume the WHAT in DIR: KEY differs from its config.yaml" (what:
 * "ablation", "search"). */
vp_status vp_job_check_base(const char* dir, const vp_config* base, const char* what);

#endif /* VP_EVAL_JOB_READ_H */
