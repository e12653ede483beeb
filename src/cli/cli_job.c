/* The multi-run job commands' shared start and end (cli_job.h). */
#include <stdio.h>

#include "cli/cli_job.h"
#include "cli/commands.h"

int vp_cli_job_config(vp_cli_job* j, const char* kind, const char* config, const char* resume,
                      const vp_cli_args* cl) {
    j->kind = kind;
    if (config) snprintf(j->cfg_path, sizeof j->cfg_path, "%s", config);
    else snprintf(j->cfg_path, sizeof j->cfg_path, "%.1000s/config.yaml", resume);
    if (vp_config_resolve(&j->cfg, j->cfg_path, cl->n_over, cl->over) != VP_OK)
        return vp_cli_fail("in the configuration");
    return 0;
}

vp_backend* vp_cli_job_open(vp_cli_job* j, const char* resume, const char* out, int force) {
    j->mode = resume ? VP_RUN_RESUME : (force ? VP_RUN_FORCE : VP_RUN_CREATE);
    if (vp_cli_job_dir(j->dir, sizeof j->dir, resume, out, j->kind, j->cfg_path) != VP_OK) {
        vp_cli_fail("naming the folder");
        return NULL;
    }
    vp_backend* b = vp_cli_backend_for(&j->cfg);
    if (!b) return NULL;
    // Ctrl-C, SIGTERM, SIGHUP: the runs in progress checkpoint and stop; a second one ends the process
    vp_cli_trap_signals();
    fprintf(stderr, "vulpes %s: %s on %s into %s\n", j->kind, j->cfg.data.path, vp_backend_name(b), j->dir);
    return b;
}

int vp_cli_job_end(const vp_cli_job* j, int interrupted, const char* done) {
    if (!interrupted) return 0;
    fprintf(stderr, "vulpes %s: stopped by %s after %s; continue with: vulpes %s --resume %s\n", j->kind,
            vp_cli_stop_name(), done, j->kind, j->dir);
    return vp_cli_stop_status();
}
