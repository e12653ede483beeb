/* The flat C API's version, error message and status names, and the backend a name asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

int vp_api_version(void) { return VP_API_VERSION; }

const char* vp_api_last_error(void) {
    // the location tail " (VP_ERR_..., file.c:123)" is for developers: kept with VULPES_DEBUG=1
    static _Thread_local char buf[1200];
    const char* msg = vp_last_error();
    const char* dbg = getenv("VULPES_DEBUG");
    if (dbg && dbg[0] && strcmp(dbg, "0") != 0) return msg;
    snprintf(buf, sizeof buf, "%s", msg);
    char* tail = NULL;
    for (char* t = strstr(buf, " (VP_ERR_"); t; t = strstr(t + 1, " (VP_ERR_")) tail = t;
    const size_t n = strlen(buf);
    if (tail && n > 0 && buf[n - 1] == ')') *tail = '\0';
    return buf;
}

const char* vp_api_status_name(int status) { return vp_status_name((vp_status)status); }

vp_status vp_api_backend(const char* name, vp_backend** out) {
    *out = NULL;
    if (!name || strcmp(name, "auto") == 0) return vp_backend_best_init(out);
    if (strcmp(name, "cpu") == 0) return vp_backend_cpu_init(out);
    if (strcmp(name, "cuda") == 0) return vp_backend_cuda_init(out, 0);
    VP_FAIL(VP_ERR_INVALID_ARG, "unknown backend '%.60s' (choose cpu, cuda or auto)", name);
}
