/* libFuzzer target: arbitrary bytes as an offline dataset (vulpes/offline.h), read through
 * vp_offline_load. A dataset it accepts must pass vp_offline_check, save again and load back
 * to the same rows; a refusal must leave the dataset zeroed and name the file.
 * Seed corpus: fuzz/corpus/offline/. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/vulpes.h"

/* The library's log goes nowhere (a refused file is the expected outcome). */
static void quiet(vp_log_level level, const char* msg, void* user) {
    (void)level;
    (void)msg;
    (void)user;
}

/* Whether two datasets hold the same rows (bit for bit; NaN logp included). */
static int same_rows(const vp_offline_data* a, const vp_offline_data* b) {
    const size_t obs = (size_t)((a->steps + 1) * a->n_envs), rows = (size_t)(a->steps * a->n_envs);
    return a->steps == b->steps && a->n_envs == b->n_envs && a->n_portfolio == b->n_portfolio &&
           memcmp(a->bar, b->bar, obs * 4) == 0 &&
           memcmp(a->portfolio, b->portfolio, obs * (size_t)a->n_portfolio * 4) == 0 &&
           memcmp(a->action, b->action, rows * 16) == 0 && memcmp(a->reward, b->reward, rows * 4) == 0 &&
           memcmp(a->done, b->done, rows * 4) == 0 && memcmp(a->logp, b->logp, rows * 4) == 0 &&
           strcmp(a->behaviour, b->behaviour) == 0 && a->seed == b->seed;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    vp_log_set_callback(quiet, NULL);
    char path[] = "/tmp/vp_fuzz_off_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    FILE* fp = fdopen(fd, "wb");
    if (!fp) {
        close(fd);
        unlink(path);
        return 0;
    }
    size_t wrote = size ? fwrite(data, 1, size, fp) : 0;
    fclose(fp);
    if (wrote != size) {
        unlink(path);
        return 0;
    }
    vp_offline_data d;
    if (vp_offline_load(path, &d) == VP_OK) {
        // accepted: valid, and a save and load give the same rows
        if (vp_offline_check(&d, "fuzz") != VP_OK) abort();
        char again[64];
        snprintf(again, sizeof again, "%s.again", path);
        vp_offline_data e;
        if (vp_offline_save(&d, again) != VP_OK || vp_offline_load(again, &e) != VP_OK) abort();
        if (!same_rows(&d, &e)) abort();
        vp_offline_free(&e);
        unlink(again);
        vp_offline_free(&d);
    } else {
        // refused: nothing kept, the file named
        if (d.bar || d.steps || strstr(vp_last_error(), path) == NULL) abort();
    }
    unlink(path);
    return 0;
}
