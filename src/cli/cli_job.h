/* The start and the end that the multi-run job commands share (`vulpes ablate`, `vulpes search`,
 * `vulpes walkforward`): the base config (the job folder's on a resume) with the overrides, the
 * folder, the backend, the stop trap and the opening line; the closing line of a stopped job
 * and its exit status. Each prints its own errors; KIND is the command's name ("search"). */
#ifndef VP_CLI_JOB_H
#define VP_CLI_JOB_H

#include <stddef.h>

#include "cli/cli_args.h"
#include "vulpes/vulpes.h"

/* The job's config into *cfg: file `config`, or with none RESUME/config.yaml, resolved with the
 * overrides of cl; the file's path into cfg_path[n]. Returns 0, or exit code 1 after printing
 * "vulpes: error in the configuration: ...". */
int vp_cli_job_config(vp_config* cfg, char* cfg_path, size_t n, const char* config, const char* resume,
                      const vp_cli_args* cl);

/* The job's folder into dir[n] (vp_cli_job_dir: resume, else out, else a new one named after
 * KIND and cfg_path) and the backend cfg asks for; then traps Ctrl-C, SIGTERM and SIGHUP and
 * prints "vulpes KIND: DATA on BACKEND into DIR" to stderr. Returns the backend (caller frees),
 * or NULL after printing the error. */
vp_backend* vp_cli_job_open(char* dir, size_t n, const char* kind, const char* resume, const char* out,
                            const char* cfg_path, const vp_config* cfg);

/* The job's exit status: 0 when it finished; when `interrupted`, after printing "vulpes KIND:
 * stopped by SIGNAL after DONE; continue with: vulpes KIND --resume DIR" to stderr (done: "2 of
 * 3 rungs"), the stop's status (vp_cli_stop_status). */
int vp_cli_job_end(const char* kind, int interrupted, const char* done, const char* dir);

#endif /* VP_CLI_JOB_H */
