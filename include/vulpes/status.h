/* vulpes: status codes, error messages and the log callback.
 *
 * Every public function returns a vp_status. On failure the library keeps a
 * thread-local message naming what failed and where; vp_last_error() returns it.
 * The library never prints to stdout and never exits; messages go to the log
 * callback (stderr by default at VP_LOG_WARN and above). */
#ifndef VULPES_STATUS_H
#define VULPES_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* What a call returned: VP_OK or the kind of failure. */
typedef enum vp_status {
    VP_OK = 0,            /* success */
    VP_ERR_INVALID_ARG,   /* a NULL pointer, a bad value or a bad enum */
    VP_ERR_SHAPE,         /* tensor shapes do not fit the operation */
    VP_ERR_DEVICE,        /* a buffer lives where the backend cannot read it */
    VP_ERR_OOM,           /* an allocation or an arena ran out of memory */
    VP_ERR_CUDA,          /* a CUDA runtime / cuBLASLt call failed */
    VP_ERR_UNSUPPORTED,   /* not available in this build or on this machine */
    VP_ERR_IO,            /* a file could not be opened, read or written */
    VP_ERR_PARSE,         /* input data is malformed */
    VP_ERR_NUMERIC,       /* a NaN / Inf was found where none may be */
    VP_ERR_STATE,         /* the call does not fit the object's current state */
    VP_STATUS_COUNT
} vp_status;

/* The short name of a status code ("VP_ERR_SHAPE"); never NULL. */
const char* vp_status_name(vp_status s);

/* The message of the last failure on this thread ("" when none); never NULL. */
const char* vp_last_error(void);

/* Clears this thread's last error message. */
void vp_clear_error(void);

/* Records a formatted error message for this thread and returns `s` (library internal use,
 * public so that every layer reports the same way). `where` is "file:line". */
vp_status vp_set_error(vp_status s, const char* where, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes this thread's last error message with context ("loading model.yaml: ...");
 * returns `s` unchanged so it can wrap a failing status. */
vp_status vp_error_context(vp_status s, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Severity of a log message. */
typedef enum vp_log_level {
    VP_LOG_DEBUG = 0, /* detail for developers */
    VP_LOG_INFO,      /* progress worth knowing */
    VP_LOG_WARN,      /* something a user should look at (a counted numerical warning) */
    VP_LOG_ERROR,     /* a failure being reported */
    VP_LOG_LEVEL_COUNT
} vp_log_level;

/* Receives every log message; `user` is the pointer given to vp_log_set_callback. */
typedef void (*vp_log_fn)(vp_log_level level, const char* msg, void* user);

/* Sets the log callback (NULL restores the default: stderr, VP_LOG_WARN and above). */
void vp_log_set_callback(vp_log_fn fn, void* user);

/* Sends a formatted message of `level` to the log callback. */
void vp_log(vp_log_level level, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The text of a macro's expansion (VP_STR_(__LINE__) -> "42"). */
#define VP_STR2_(x) #x
#define VP_STR_(x) VP_STR2_(x)
/* "file:line" of the call site. */
#define VP_WHERE __FILE__ ":" VP_STR_(__LINE__)

/* Returns from the enclosing function with an error status and message. */
#define VP_FAIL(status, ...) return vp_set_error((status), VP_WHERE, __VA_ARGS__)

/* Returns `status` with the formatted message from the enclosing function when `cond` is
 * false. */
#define VP_REQUIRE(cond, status, ...)                                                    \
    do {                                                                                 \
        if (!(cond)) return vp_set_error((status), VP_WHERE, __VA_ARGS__);               \
    } while (0)

/* Evaluates a vp_status expression and returns it from the enclosing function on failure. */
#define VP_TRY(expr)                                                                     \
    do {                                                                                 \
        vp_status vp_try_s_ = (expr);                                                    \
        if (vp_try_s_ != VP_OK) return vp_try_s_;                                        \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif /* VULPES_STATUS_H */
