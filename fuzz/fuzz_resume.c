/* libFuzzer target: resume from arbitrary bytes as last.safetensors. A tiny trainer (the
 * tests' synthetic market, CPU backend, a ring of 64 transitions) is built once; each input is
 * written to a scratch file and loaded with vp_trainer_load into it. The load must return an
 * error or VP_OK, never crash; after VP_OK one iteration must run on the restored state.
 *
 * Corpus: fuzz/corpus/resume/. With VP_FUZZ_SEED=PATH set, the start-up also saves the
 * trainer's own resume checkpoint to PATH (a valid seed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_train_util.h"

/* The tiny run: small ring, few envs, short warm-up. */
static const char* const TINY[] = {"replay.capacity=64", "replay.warmup=40", "env.n_envs=3", "learn.batch=8",
                                   "model.hidden=8", "model.head_hidden=8", "model.n_atoms=5", "model.iqn_cos=4"};

static vp_backend* g_backend;
static vp_config g_cfg;
static vp_train_data g_data;
static vp_trainer g_trainer;
static char g_path[600];

/* Builds the trainer, trains it a little and saves its checkpoint as the seed; 0 on failure. */
static int setup(void) {
    if (vp_backend_cpu_init(&g_backend) != VP_OK) return 0;
    if (!vpt_train_cfg(&g_cfg, (int)(sizeof TINY / sizeof TINY[0]), TINY)) return 0;
    if (vp_train_data_load(&g_data, &g_cfg) != VP_OK) return 0;
    if (vp_trainer_init(&g_trainer, g_backend, &g_cfg, &g_data) != VP_OK) return 0;
    if (vp_trainer_warmup(&g_trainer) != VP_OK || vp_trainer_iterate(&g_trainer, 2) != VP_OK) return 0;
    const char* base = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/vulpes-fuzz-resume-%ld.safetensors", base && base[0] ? base : "/tmp",
             (long)getpid());
    const char* seed = getenv("VP_FUZZ_SEED");
    if (seed && seed[0] && vp_trainer_save(&g_trainer, seed, VP_CKPT_RESUME) != VP_OK) return 0;
    return 1;
}

/* Drops log messages (refusals are expected by the thousand). */
static void quiet(vp_log_level level, const char* msg, void* user) { (void)level, (void)msg, (void)user; }

int LLVMFuzzerInitialize(int* argc, char*** argv) {
    (void)argc, (void)argv;
    vp_log_set_callback(quiet, NULL);
    if (!setup()) {
        fprintf(stderr, "fuzz_resume: set-up failed: %s\n", vp_last_error());
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FILE* f = fopen(g_path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    vp_status s = vp_trainer_load(&g_trainer, g_path);
    // A restored state must train.
    if (s == VP_OK && vp_trainer_iterate(&g_trainer, 1) != VP_OK) {
        fprintf(stderr, "fuzz_resume: a loaded state does not train: %s\n", vp_last_error());
        abort();
    }
    remove(g_path);
    return 0;
}
