/* Status names, thread-local error messages and the log callback. */
#include "vulpes/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_error[1024];

static vp_log_fn g_log_fn = NULL;
static void* g_log_user = NULL;

const char* vp_status_name(vp_status s) {
    static const char* names[VP_STATUS_COUNT] = {
        "VP_OK",          "VP_ERR_INVALID_ARG", "VP_ERR_SHAPE",       "VP_ERR_DEVICE",
        "VP_ERR_OOM",     "VP_ERR_CUDA",        "VP_ERR_UNSUPPORTED", "VP_ERR_IO",
        "VP_ERR_PARSE",   "VP_ERR_NUMERIC",     "VP_ERR_STATE",
    };
    if ((int)s < 0 || s >= VP_STATUS_COUNT) return "VP_ERR_UNKNOWN";
    return names[s];
}

const char* vp_last_error(void) { return g_error; }

void vp_clear_error(void) { g_error[0] = '\0'; }

vp_status vp_set_error(vp_status s, const char* where, const char* fmt, ...) {
    char msg[896];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(g_error, sizeof g_error, "%.800s (%s, %.180s)", msg, vp_status_name(s), where);
    vp_log(VP_LOG_DEBUG, "%s", g_error);
    return s;
}

vp_status vp_error_context(vp_status s, const char* fmt, ...) {
    char ctx[512];
    char inner[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    memcpy(inner, g_error, sizeof inner);
    snprintf(g_error, sizeof g_error, "%.400s: %.600s", ctx, inner);
    return s;
}

void vp_log_set_callback(vp_log_fn fn, void* user) {
    g_log_fn = fn;
    g_log_user = user;
}

void vp_log(vp_log_level level, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_log_fn) {
        g_log_fn(level, msg, g_log_user);
    } else if (level >= VP_LOG_WARN) {
        static const char* tags[VP_LOG_LEVEL_COUNT] = {"debug", "info", "warn", "error"};
        fprintf(stderr, "vulpes %s: %s\n", tags[level < VP_LOG_LEVEL_COUNT ? level : 0], msg);
    }
}
