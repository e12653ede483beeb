/* Internal: a multi-run job's table files written (an ablation's, a search's): a CSV number,
 * a JSON document on a stream or saved in the folder, and a set of files each written
 * atomically by its writer. */
#ifndef VP_EVAL_JOB_WRITE_H
#define VP_EVAL_JOB_WRITE_H

#include <stdio.h>

#include "vulpes/status.h"

struct cJSON;

/* A file's writer: writes the whole file to out from ctx. */
typedef vp_status (*vp_job_writer)(FILE* out, const void* ctx);

/* v for a CSV file: full precision (%.17g), "inf" / "-inf", nothing for NaN. */
void vp_job_csv_num(FILE* out, double v);

/* The end of a JSON file's writer: when s (how building root went) is VP_OK, writes root as
 * indented JSON and a newline to out; deletes root either way; returns s, else the write's
 * status. `file` names the file in the errors ("FILE: out of memory", "writing FILE failed"). */
vp_status vp_job_json_write(FILE* out, struct cJSON* root, vp_status s, const char* file);

/* Saves root as indented JSON and a newline in dir/file, atomically; root stays the caller's. */
vp_status vp_job_json_save(const char* dir, const char* file, const struct cJSON* root);

/* Writes dir/names[i] by writers[i](out, ctx) for i < n, in order, each atomically (a failed
 * writer's file is left as it was; the error names the path). */
vp_status vp_job_write_files(const char* dir, const char* const* names, const vp_job_writer* writers, int n,
                             const void* ctx);

#endif /* VP_EVAL_JOB_WRITE_H */
