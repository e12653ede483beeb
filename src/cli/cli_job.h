/* The start and the end that the multi-run job commands share (`vulpes ablate`, `vulpes search`,
 * `vulpes walkforward`): the base config (the job folder's on a resume) with the overrides, the
 * folder and its mode, the backend, the stop trap and the opening line; the closing line of a
 * stopped job and its exit status. Each prints its own errors. */
#ifndef VP_CLI_JOB_H
#define VP_CLI_JOB_H

#include "cli/cli_args.h"
#include "vulpes/vulpes.h"

/* A job command's config and folder. */
typedef struct vp_cli_job {
    const char* kind;    /* the command's name ("search"): its messages, its default folder's name */
    char cfg_path[1100]; /* the config file: CONFIG, or RESUME/config.yaml */
    vp_config cfg;       /* that file resolved with the overrides */
    char dir[1100];      /* the job folder */
    vp_run_mode mode;    /* RESUME with --resume, else FORCE with --force, else CREATE */
} vp_cli_job;

/* Starts *j for command `kind`: its config from file `config`, or with none RESUME/config.yaml,
 * resolved with the overrides of cl. Returns 0, or exit code 1 after printing "vulpes: error in
 * the configuration: ...". */
int vp_cli_job_config(vp_cli_job* j, const char* kind, const char* config, const char* resume,
                      const vp_cli_args* cl);

/* The folder (vp_cli_job_dir: resume, else out, else a new one named after the kind and the
 * config file) and its mode, then the backend j->cfg asks for; traps Ctrl-C, SIGTERM and SIGHUP
 * and prints "vulpes KIND: DATA on BACKEND into DIR" to stderr. Returns the backend (caller
 * frees), or NULL after printing the error. */
vp_backend* vp_cli_job_open(vp_cli_job* j, const char* resume, const char* out, int force);

/* The job's exit status: 0 when it finished; when `interrupted`, after printing "vulpes KIND:
 * stopped by SIGNAL after DONE; continue with: vulpes KIND --resume DIR" to stderr (done: "2 of
 * 3 rungs"), the stop's status (vp_cli_stop_status). */
int vp_cli_job_end(const vp_cli_job* j, int interrupted, const char* done);

#endif /* VP_CLI_JOB_H */
