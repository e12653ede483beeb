/* Run folders trained as pool jobs with one progress line over them (pool_runs.h): the
 * training loop's hooks (progress, notes, stop poll, finishing step), the resume-or-start
 * decision and the counters. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/pool_runs.h"
#include "vulpes/backtest.h"

/* What the training loop's hooks see. */
typedef struct hooks {
    const vp_pool_job* j;
    vp_progress_sink sink; /* the loop's notes (warm-up, warnings), prefixed by the job's label */
} hooks;

void vp_pool_runs_begin(vp_pool_runs* p, const char* what, int64_t line_done, int64_t line_total,
                        int64_t work_total) {
    snprintf(p->line_what, sizeof p->line_what, "%s", what);
    p->line_done = line_done, p->line_total = line_total, p->work_total = work_total;
    for (int64_t i = 0; p->iter0 && i < p->n_slots; ++i) p->iter0[i] = -1;
    p->t0 = vp_clock_s();
    p->last_line = p->t0 - p->interval_s; // the first report prints at once
}

void vp_pool_runs_note(vp_pool_runs* p, const char* msg) {
    if (!p->progress) return;
    pthread_mutex_lock(&p->mu);
    fprintf(p->progress, "%s\n", msg);
    fflush(p->progress);
    pthread_mutex_unlock(&p->mu);
}

void vp_pool_runs_say(vp_pool_runs* p, const char* label, const char* msg) {
    char line[1600];
    snprintf(line, sizeof line, "%s: %s", label, msg);
    vp_pool_runs_note(p, line);
}

void vp_pool_runs_pool_note(vp_pool_runs* p, const char* owner, const char* msg) {
    char line[512];
    snprintf(line, sizeof line, "%s: %s", owner, msg);
    vp_log(VP_LOG_INFO, "%s", line);
    vp_pool_runs_note(p, line);
}

void vp_pool_runs_progress(vp_pool_runs* p, int64_t slot, int64_t iteration) {
    if (!p->progress || !p->iters) return;
    pthread_mutex_lock(&p->mu);
    p->iters[slot] = iteration;
    if (p->iter0[slot] < 0) p->iter0[slot] = iteration;
    const double now = vp_clock_s();
    if (now - p->last_line >= p->interval_s) {
        p->last_line = now;
        // a slot without a report since begin adds nothing
        int64_t work = 0;
        for (int64_t i = 0; i < p->n_slots; ++i) work += p->iter0[i] >= 0 ? p->iters[i] - p->iter0[i] : 0;
        const double el = now - p->t0, frac = p->work_total > 0 ? (double)work / (double)p->work_total : 0.0;
        char eta[32] = "-";
        if (work > 0 && frac <= 1.0) snprintf(eta, sizeof eta, "%.0fs", el * (1.0 - frac) / frac);
        fprintf(p->progress, "[%.0fs] %s %lld/%lld done, %lld running | iterations %lld/%lld (%.1f%%) | ETA %s\n",
                el, p->line_what, (long long)p->line_done, (long long)p->line_total,
                (long long)(p->started - p->done), (long long)work, (long long)p->work_total, 100.0 * frac, eta);
        fflush(p->progress);
    }
    pthread_mutex_unlock(&p->mu);
}

static void sink_update(void* ctx, const vp_progress_stats* st) {
    const vp_pool_job* j = ((const hooks*)ctx)->j;
    vp_pool_runs_progress(j->p, j->slot, st->iteration);
}

static void sink_note(void* ctx, const char* msg) {
    const vp_pool_job* j = ((const hooks*)ctx)->j;
    vp_pool_runs_say(j->p, j->label, msg);
}

/* The loop's stop poll: a stop request, or another run's failure. */
static int should_stop(void* ctx) {
    const vp_pool_runs* p = ((const hooks*)ctx)->j->p;
    return (p->stop && *p->stop) || p->halt;
}

/* The loop's finishing step: the test span's files, as `vulpes train` writes them. */
static vp_status finish(void* ctx, const vp_train_end* end, struct cJSON* test) {
    (void)ctx;
    return vp_backtest_train_finish(NULL, end, test);
}

vp_status vp_pool_runs_train(const vp_pool_job* j, vp_backend* b, vp_train_result* r) {
    vp_pool_runs* p = j->p;
    hooks h;
    memset(&h, 0, sizeof h);
    h.j = j;
    // a run that may continue does when its folder holds a checkpoint; any other starts over
    char ck[VP_RUN_PATH_MAX + 32];
    snprintf(ck, sizeof ck, "%s/last.safetensors", j->dir);
    struct stat st;
    const int cont = j->may_continue && stat(ck, &st) == 0;
    vp_train_opts o = vp_train_opts_default();
    o.mode = cont ? VP_RUN_RESUME : VP_RUN_FORCE;
    o.run_dir = j->dir;
    o.fused = p->fused;
    o.finish = finish;
    o.should_stop = should_stop;
    o.ctx = &h;
    h.sink.update = sink_update, h.sink.note = sink_note, h.sink.ctx = &h;
    if (p->progress) o.progress_sink = &h.sink;
    pthread_mutex_lock(&p->mu);
    p->started++;
    pthread_mutex_unlock(&p->mu);
    char start[192];
    snprintf(start, sizeof start, "%s on %s", cont ? "continuing from its last.safetensors" : "training",
             vp_backend_name(b));
    vp_pool_runs_say(p, j->label, start);
    VP_TRY(vp_train_run_data(j->cfg, b, j->data, &o, r));
    if (r->interrupted) {
        char msg[256];
        snprintf(msg, sizeof msg, "stopped at iteration %lld (a resume continues it)", (long long)r->count.iteration);
        vp_pool_runs_say(p, j->label, msg);
    } else {
        pthread_mutex_lock(&p->mu);
        p->done++;
        p->line_done++;
        pthread_mutex_unlock(&p->mu);
    }
    return VP_OK;
}
