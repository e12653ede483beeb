/* GPU test: recordings on CUDA against the CPU's (vulpes/record.h).
 * - random and ma_cross with epsilon 0.3, 13 steps of 517 envs with 5-bar episodes (restarts
 *   inside): every bar, portfolio, action, reward, done and logp identical, bit for bit (the
 *   behaviours decide on the host and the env step is exact on both backends);
 * - the copies a CUDA recording makes: the same for 5 envs as for 517 (downloads are per step,
 *   never per env), and 5 more per extra step (the observations' two, the actions' upload, the
 *   rewards' and ends' downloads);
 * - a short training run's checkpoint recorded through the job on both backends: at the first
 *   step, where every observation is the same, at least 90 % of 64 envs choose as on the CPU
 *   (the Q-values may differ in their last bits and flip a near tie), and an env that chose
 *   the same at every step has the same rows.
 * Prints what differs and "N passed, N failed". Run on a GPU machine (scripts/gpu.sh). */
#include "test_record_util.h"
#include "vp_test.h"

/* Compares two recordings array by array; prints the first difference of each. */
static void same_rows(const vp_offline_data* a, const vp_offline_data* b, const char* what) {
    CHECK(a->steps == b->steps && a->n_envs == b->n_envs, "%s: sizes differ", what);
    if (a->steps != b->steps || a->n_envs != b->n_envs) return;
    const int64_t E = a->n_envs, obs = (a->steps + 1) * E, rows = a->steps * E;
    for (int64_t k = 0; k < obs; ++k)
        if (a->bar[k] != b->bar[k]) {
            CHECK(0, "%s: bar of row %lld env %lld: cpu %d, cuda %d", what, (long long)(k / E), (long long)(k % E),
                  a->bar[k], b->bar[k]);
            break;
        }
    for (int64_t k = 0; k < obs * 8; ++k)
        if (memcmp(&a->portfolio[k], &b->portfolio[k], 4) != 0) {
            CHECK(0, "%s: portfolio element %lld: cpu %.9g, cuda %.9g", what, (long long)k, (double)a->portfolio[k],
                  (double)b->portfolio[k]);
            break;
        }
    for (int64_t k = 0; k < rows; ++k) {
        const int act = memcmp(a->action + k * 4, b->action + k * 4, 16) != 0;
        const int rew = memcmp(&a->reward[k], &b->reward[k], 4) != 0, done = a->done[k] != b->done[k];
        const int lp = memcmp(&a->logp[k], &b->logp[k], 4) != 0;
        if (act || rew || done || lp) {
            CHECK(0, "%s: row %lld env %lld: action %s, reward cpu %.9g cuda %.9g, done %g %g, logp %g %g", what,
                  (long long)(k / E), (long long)(k % E), act ? "differs" : "same", (double)a->reward[k],
                  (double)b->reward[k], (double)a->done[k], (double)b->done[k], (double)a->logp[k],
                  (double)b->logp[k]);
            break;
        }
    }
}

/* Records beh for T steps of E envs on b into *out; returns the copies b counted meanwhile. */
static int64_t record(vp_backend* b, const vp_train_data* d, const vp_config* cfg, const vp_behaviour* beh,
                      int64_t T, int64_t E, vp_offline_data* out) {
    memset(out, 0, sizeof *out);
    vp_record_cfg c;
    if (!vpt_record_cfg(d, cfg, T, E, 21, 5, &c)) return -1;
    vp_runtime_counters before, after;
    vp_backend_counters(b, &before);
    CHECK_OK(vp_record_run(b, d, NULL, beh, &c, out));
    vp_backend_counters(b, &after);
    return after.copies - before.copies;
}

static void test_parity(void) {
    vp_train_data d;
    vp_config cfg;
    if (!vpt_record_data(&d, &cfg, 0, NULL)) return;
    vp_backend *cb = NULL, *gb = NULL;
    CHECK_OK(vp_backend_cpu_init(&cb));
    if (vp_backend_cuda_init(&gb, 0) != VP_OK) {
        CHECK(0, "no CUDA backend: %s", vp_last_error());
        vp_backend_free(cb);
        vp_train_data_free(&d);
        return;
    }
    const char* specs[2] = {"random", "ma_cross:fast=4,slow=12,size=2,epsilon=0.3"};
    for (int k = 0; k < 2; ++k) {
        vp_behaviour beh;
        CHECK_OK(vp_behaviour_parse(specs[k], &beh));
        vp_offline_data rc, rg, small, longer;
        record(cb, &d, &cfg, &beh, 13, 517, &rc);
        const int64_t copies = record(gb, &d, &cfg, &beh, 13, 517, &rg);
        same_rows(&rc, &rg, specs[k]);
        int ends = 0;
        for (int64_t r = 0; r < 13 * 517; ++r) ends += rg.done[r] == 1.0f;
        CHECK(ends >= 517 * 2, "%s: %d episode ends in 13 steps of 5-bar episodes", specs[k], ends);
        // the copies: independent of the env count, 5 per step
        const int64_t copies_small = record(gb, &d, &cfg, &beh, 13, 5, &small);
        const int64_t copies_longer = record(gb, &d, &cfg, &beh, 26, 517, &longer);
        CHECK(copies_small == copies, "%s: %lld copies for 5 envs, %lld for 517", specs[k], (long long)copies_small,
              (long long)copies);
        CHECK(copies_longer - copies == 13 * 5, "%s: %lld copies more for 13 more steps, expected 65", specs[k],
              (long long)(copies_longer - copies));
        vp_offline_free(&rc), vp_offline_free(&rg), vp_offline_free(&small), vp_offline_free(&longer);
    }
    vp_backend_free(gb);
    vp_backend_free(cb);
    vp_train_data_free(&d);
}

static void test_checkpoint(void) {
    char dir[512], run[600], ck[700], out[2][700];
    vpt_tmp_dir(dir, sizeof dir, "gpu-record");
    vpt_rm_run(dir);
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    const char* over[] = {"train.iterations=2", "train.eval_every=2", "replay.warmup=40"};
    vp_train_result tr;
    CHECK_OK(vpt_train_run(run, VP_RUN_CREATE, 0, NULL, 3, over, &tr));
    snprintf(ck, sizeof ck, "%s/last.safetensors", run);
    vp_backend* bs[2] = {NULL, NULL};
    CHECK_OK(vp_backend_cpu_init(&bs[0]));
    if (vp_backend_cuda_init(&bs[1], 0) != VP_OK) {
        CHECK(0, "no CUDA backend: %s", vp_last_error());
        vp_backend_free(bs[0]);
        return;
    }
    vp_offline_data r[2];
    for (int k = 0; k < 2; ++k) {
        vp_record_job job;
        memset(&job, 0, sizeof job);
        job.checkpoint = ck;
        job.steps = 8;
        job.n_envs = 64;
        snprintf(out[k], sizeof out[k], "%s/%s.safetensors", dir, k ? "cuda" : "cpu");
        job.out = out[k];
        vp_record_report rep;
        CHECK_OK(vp_record_job_run(bs[k], &job, &rep));
        CHECK_OK(vp_offline_load(out[k], &r[k]));
    }
    if (r[0].bar && r[1].bar) {
        int first = 0, kept = 0;
        for (int i = 0; i < 64; ++i) first += memcmp(r[0].action + i * 4, r[1].action + i * 4, 16) == 0;
        CHECK(first >= 58, "first step: %d of 64 envs choose as on the CPU (at least 58)", first);
        for (int i = 0; i < 64; ++i) {
            int same = 1;
            for (int t = 0; t < 8; ++t)
                same &= memcmp(r[0].action + (t * 64 + i) * 4, r[1].action + (t * 64 + i) * 4, 16) == 0;
            if (!same) continue;
            kept++;
            for (int t = 0; t < 8; ++t) {
                const int64_t k = t * 64 + i;
                CHECK(r[0].reward[k] == r[1].reward[k] && r[0].done[k] == r[1].done[k] &&
                          r[0].bar[k + 64] == r[1].bar[k + 64],
                      "env %d step %d: the same actions, other rows", i, t);
            }
        }
        fprintf(stderr, "  checkpoint: %d of 64 envs chose as on the CPU at the first step, %d at every step\n",
                first, kept);
    }
    vp_offline_free(&r[0]), vp_offline_free(&r[1]);
    vp_backend_free(bs[0]), vp_backend_free(bs[1]);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_parity);
    RUN_TEST(test_checkpoint);
    return vpt_finish();
}
