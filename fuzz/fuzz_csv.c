/* Fuzz target: the CSV bar loader (vp_bars_load_csv) on arbitrary bytes.
 *
 * Each input is written to a temporary file (mkstemp, removed after) and loaded twice,
 * refusing bad rows and skipping them, with the cache off. Besides the sanitizers'
 * findings, it aborts when a load breaks the loader's contract: a success must give bars
 * that pass vp_bars_validate and a report that counts them; a failure must leave the
 * output empty and say why. */
#define _XOPEN_SOURCE 700
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/vulpes.h"

/* Warnings are expected on bad input; keep the fuzzer's output readable. */
static void quiet(vp_log_level level, const char* msg, void* user) {
    (void)level;
    (void)msg;
    (void)user;
}

/* Stops the run with what broke, so libFuzzer records the input as a crash. */
static void broken(const char* what, const char* detail) {
    fprintf(stderr, "fuzz_csv: %s: %s\n", what, detail);
    abort();
}

/* One load of path; checks the contract described above. */
static void load_once(const char* path, int skip) {
    vp_load_opts o = vp_load_opts_default();
    o.use_cache = 0;
    o.skip_bad_rows = skip;
    vp_bars b;
    vp_load_report r;
    vp_clear_error();
    vp_status s = vp_bars_load_csv(path, &o, &b, &r);
    if (s == VP_OK) {
        if (vp_bars_validate(&b) != VP_OK) broken("loaded bars break the invariants", vp_last_error());
        if (r.rows_kept != b.n || r.rows_kept + r.rows_dropped != r.rows_read)
            broken("report does not count the bars", path);
        if (!skip && r.rows_dropped != 0) broken("a strict load dropped rows", path);
    } else {
        const char* m = vp_last_error();
        if (b.n != 0 || b.time_ms != NULL) broken("a failed load left bars", m);
        if (s != VP_ERR_PARSE && s != VP_ERR_IO) broken("unexpected status", vp_status_name(s));
        if (m == NULL || strstr(m, path) == NULL) broken("the message does not name the file", m ? m : "(none)");
    }
    vp_bars_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static int init = 0;
    if (!init) {
        vp_log_set_callback(quiet, NULL);
        init = 1;
    }

    /* The input as a file. */
    const char* tmpdir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/vulpes_fuzz_csv_XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) broken("mkstemp", path);
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) broken("write", path);
        done += (size_t)w;
    }
    close(fd);

    /* Strict, then skipping bad rows. */
    load_once(path, 0);
    load_once(path, 1);
    remove(path);
    return 0;
}
