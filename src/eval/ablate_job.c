/* One ablation run: the training loop (vp_train_run_data, as `vulpes train` runs it) on its
 * variant's data in its own folder, the test span's files written by the same finishing step
 * (vp_backtest_train_finish), progress as whole lines prefixed by the run. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/ablate_impl.h"
#include "vulpes/backtest.h"
#include "vulpes/train.h"

/* What the training loop's hooks see. */
typedef struct job {
    vp_ablate_ctx* c;
    int64_t k;              /* the run's index */
    vp_progress_sink sink;  /* the loop's notes (warm-up, warnings), prefixed by the run */
} job;

void vp_ablate_note(vp_ablate_ctx* c, const char* msg) {
    if (!c->opts->progress) return;
    pthread_mutex_lock(&c->mu);
    fprintf(c->opts->progress, "%s\n", msg);
    fflush(c->opts->progress);
    pthread_mutex_unlock(&c->mu);
}

/* "run K/N (VARIANT, seed S)" of run k into buf[n]. */
static const char* run_label(const vp_ablate_ctx* c, int64_t k, char* buf, size_t n) {
    const vp_ablate_trial* r = &c->r->runs[k];
    snprintf(buf, n, "run %lld/%lld (%s, seed %lld)", (long long)(k + 1), (long long)c->r->n_runs,
             c->r->variants[r->variant].name, (long long)r->seed);
    return buf;
}

/* A line about run k. */
static void say(const job* j, const char* msg) {
    char label[VP_ABLATE_NAME_MAX + 64], line[VP_ABLATE_NAME_MAX + 1200];
    snprintf(line, sizeof line, "%s: %s", run_label(j->c, j->k, label, sizeof label), msg);
    vp_ablate_note(j->c, line);
}

void vp_ablate_progress(vp_ablate_ctx* c, int64_t k, int64_t iteration) {
    if (!c->opts->progress) return;
    pthread_mutex_lock(&c->mu);
    c->iters[k] = iteration;
    if (c->iter0[k] < 0) c->iter0[k] = iteration;
    const double now = vp_clock_s();
    if (now - c->last_line >= c->interval_s) {
        c->last_line = now;
        int64_t work = 0;
        for (int64_t i = 0; i < c->r->n_runs; ++i) work += c->iter0[i] >= 0 ? c->iters[i] - c->iter0[i] : 0;
        const double el = now - c->t0, frac = c->work_total > 0 ? (double)work / (double)c->work_total : 0.0;
        char eta[32] = "-";
        if (work > 0 && frac <= 1.0) snprintf(eta, sizeof eta, "%.0fs", el * (1.0 - frac) / frac);
        fprintf(c->opts->progress, "[%.0fs] runs %lld/%lld done, %lld running | iterations %lld/%lld (%.1f%%) | ETA %s\n",
                el, (long long)c->done, (long long)c->r->n_runs, (long long)(c->started - c->done), (long long)work,
                (long long)c->work_total, 100.0 * frac, eta);
        fflush(c->opts->progress);
    }
    pthread_mutex_unlock(&c->mu);
}

static void sink_update(void* ctx, const vp_progress_stats* st) {
    const job* j = (const job*)ctx;
    vp_ablate_progress(j->c, j->k, st->iteration);
}

static void sink_note(void* ctx, const char* msg) {
    say((const job*)ctx, msg);
}

/* The loop's stop poll: a stop request, or another run's failure. */
static int should_stop(void* ctx) {
    const vp_ablate_ctx* c = ((const job*)ctx)->c;
    return (c->opts->stop && *c->opts->stop) || c->halt;
}

/* The loop's finishing step: the test span's files, as `vulpes train` writes them. */
static vp_status finish(void* ctx, const vp_train_end* end, struct cJSON* test) {
    (void)ctx;
    return vp_backtest_train_finish(NULL, end, test);
}

vp_status vp_ablate_job_run(vp_ablate_ctx* c, vp_backend* b, int64_t k, int* stopped) {
    job j;
    memset(&j, 0, sizeof j);
    j.c = c, j.k = k;
    *stopped = 0;
    const vp_ablate_trial* run = &c->r->runs[k];
    // a resumed run continues from its checkpoint; any other starts over in its folder
    char ck[VP_RUN_PATH_MAX + 32];
    snprintf(ck, sizeof ck, "%s/last.safetensors", run->dir);
    struct stat st;
    const int cont = c->resume && stat(ck, &st) == 0;
    vp_train_opts o = vp_train_opts_default();
    o.mode = cont ? VP_RUN_RESUME : VP_RUN_FORCE;
    o.run_dir = run->dir;
    o.fused = c->opts->fused;
    o.finish = finish;
    o.should_stop = should_stop;
    o.ctx = &j;
    j.sink.update = sink_update, j.sink.note = sink_note, j.sink.ctx = &j;
    if (c->opts->progress) o.progress_sink = &j.sink;
    pthread_mutex_lock(&c->mu);
    c->started++;
    pthread_mutex_unlock(&c->mu);
    say(&j, cont ? "continuing from its last.safetensors" : "training");
    vp_train_result r;
    vp_status s = vp_train_run_data(&c->run_cfg[k], b, c->data[run->variant], &o, &r);
    char label[VP_ABLATE_NAME_MAX + 64];
    if (s != VP_OK) return vp_error_context(s, "%s in %s", run_label(c, k, label, sizeof label), run->dir);
    *stopped = r.interrupted;
    char msg[256];
    if (r.interrupted) {
        snprintf(msg, sizeof msg, "stopped at iteration %lld (a resume continues it)", (long long)r.count.iteration);
    } else {
        c->finished_now[k] = 1;
        pthread_mutex_lock(&c->mu);
        c->done++;
        pthread_mutex_unlock(&c->mu);
        snprintf(msg, sizeof msg, "done: test Sharpe %.3f, total return %.2f %%", r.test.strategy.sharpe,
                 100.0 * r.test.strategy.total_return);
    }
    say(&j, msg);
    return VP_OK;
}
