/* The multi-run job commands' shared start and end (cli_job.h). */
#include <stdio.h>

#include "cli/cli_job.h"
#include "cli/commands.h"

int vp_cli_job_config(vp_config* cfg, char* cfg_path, size_t n, const char* config, const char* resume,
                      const vp_cli_args* cl) {
    if (config) snprintf(cfg_path, n, "%s", config);
    else snprintf(cfg_path, n, "%.1000s/config.yaml", resume);
    if (vp_config_resolve(cfg, cfg_path, cl->n_over, cl->over) != VP_OK)
        return vp_cli_fail("in the configuration");
    return 0;
}

vp_backend* vp_cli_job_open(char* dir, size_t n, const char* kind, const char* resume, const char* out,
                            const char* cfg_path, const vp_config* cfg) {
    if (vp_cli_job_dir(dir, n, resume, out, kind, cfg_path) != VP_OK) {
        vp_cli_fail("naming the folder");
        return NULL;
    }
    vp_backend* b = vp_cli_backend_for(cfg);
    if (!b) return NULL;
    // Ctrl-C, SIGTERM, SIGHUP: the runs in progress checkpoint and stop; a second one ends the process
    vp_cli_trap_signals();
    fprintf(stderr, "vulpes %s: %s on %s into %s\n", kind, cfg->data.path, vp_backend_name(b), dir);
    return b;
}

int vp_cli_job_end(const char* kind, int interrupted, const char* done, const char* dir) {
    if (!interrupted) return 0;
    fprintf(stderr, "vulpes %s: stopped by %s after %s; continue with: vulpes %s --resume %s\n", kind,
            vp_cli_stop_name(), done, kind, dir);
    return vp_cli_stop_status();
}
