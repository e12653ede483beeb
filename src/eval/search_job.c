/* One trial run of a rung: the training loop (vp_train_run_data, as `vulpes train` runs it) on
 * the trial's data in its own folder, to its rung's iterations — from its start in rung 0,
 * else continued from the last.safetensors of its previous rung with train.iterations raised
 * — the test span's files written by the same finishing step (vp_backtest_train_finish),
 * progress as whole lines prefixed by the trial. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/search_impl.h"
#include "vulpes/backtest.h"
#include "vulpes/train.h"

/* What the training loop's hooks see. */
typedef struct job {
    vp_search_ctx* c;
    int64_t trial;          /* the trial's index */
    vp_progress_sink sink;  /* the loop's notes (warm-up, warnings), prefixed by the trial */
} job;

void vp_search_note(vp_search_ctx* c, const char* msg) {
    if (!c->opts->progress) return;
    pthread_mutex_lock(&c->mu);
    fprintf(c->opts->progress, "%s\n", msg);
    fflush(c->opts->progress);
    pthread_mutex_unlock(&c->mu);
}

/* A line about the job's trial: "trial 3 (rung 1, 40 iterations): MSG". */
static void say(const job* j, const char* msg) {
    char line[1400];
    snprintf(line, sizeof line, "trial %lld (rung %d, %lld iterations): %s", (long long)j->trial, j->c->rung,
             (long long)j->c->r->budgets[j->c->rung], msg);
    vp_search_note(j->c, line);
}

void vp_search_progress(vp_search_ctx* c, int64_t trial, int64_t iteration) {
    if (!c->opts->progress || !c->iters) return;
    pthread_mutex_lock(&c->mu);
    c->iters[trial] = iteration;
    if (c->iter0[trial] < 0) c->iter0[trial] = iteration;
    const double now = vp_clock_s();
    if (now - c->last_line >= c->interval_s) {
        c->last_line = now;
        int64_t work = 0;
        for (int64_t i = 0; i < c->n_members; ++i) {
            const int64_t t = c->members[i];
            work += c->iter0[t] >= 0 ? c->iters[t] - c->iter0[t] : 0;
        }
        const double el = now - c->t0, frac = c->work_total > 0 ? (double)work / (double)c->work_total : 0.0;
        char eta[32] = "-";
        if (work > 0 && frac <= 1.0) snprintf(eta, sizeof eta, "%.0fs", el * (1.0 - frac) / frac);
        fprintf(c->opts->progress, "[%.0fs] rung %d: trials %lld/%lld done, %lld running | iterations %lld/%lld "
                "(%.1f%%) | ETA %s\n", el, c->rung, (long long)c->rung_done, (long long)c->n_members,
                (long long)(c->started - c->done), (long long)work, (long long)c->work_total, 100.0 * frac, eta);
        fflush(c->opts->progress);
    }
    pthread_mutex_unlock(&c->mu);
}

static void sink_update(void* ctx, const vp_progress_stats* st) {
    const job* j = (const job*)ctx;
    vp_search_progress(j->c, j->trial, st->iteration);
}

static void sink_note(void* ctx, const char* msg) {
    say((const job*)ctx, msg);
}

/* The loop's stop poll: a stop request, or another trial's failure. */
static int should_stop(void* ctx) {
    const vp_search_ctx* c = ((const job*)ctx)->c;
    return (c->opts->stop && *c->opts->stop) || c->halt;
}

/* The loop's finishing step: the test span's files, as `vulpes train` writes them. */
static vp_status finish(void* ctx, const vp_train_end* end, struct cJSON* test) {
    (void)ctx;
    return vp_backtest_train_finish(NULL, end, test);
}

vp_status vp_search_job_run(vp_search_ctx* c, vp_backend* b, int64_t trial, int* stopped) {
    job j;
    memset(&j, 0, sizeof j);
    j.c = c, j.trial = trial;
    *stopped = 0;
    const vp_search_trial* t = &c->r->trials[trial];
    // a trial past rung 0, or one a resume finds a checkpoint of, continues; any other starts over
    char ck[VP_RUN_PATH_MAX + 32];
    snprintf(ck, sizeof ck, "%s/last.safetensors", t->dir);
    struct stat st;
    const int cont = (c->rung > 0 || c->resume) && stat(ck, &st) == 0;
    vp_config cfg = c->cfg[trial];
    cfg.train.iterations = c->r->budgets[c->rung];
    vp_train_opts o = vp_train_opts_default();
    o.mode = cont ? VP_RUN_RESUME : VP_RUN_FORCE;
    o.run_dir = t->dir;
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
    vp_status s = vp_train_run_data(&cfg, b, c->data[trial], &o, &r);
    if (s != VP_OK) return vp_error_context(s, "trial %lld (rung %d) in %s", (long long)trial, c->rung, t->dir);
    *stopped = r.interrupted;
    char msg[256];
    if (r.interrupted) {
        snprintf(msg, sizeof msg, "stopped at iteration %lld (a resume continues it)", (long long)r.count.iteration);
    } else {
        pthread_mutex_lock(&c->mu);
        c->done++;
        c->rung_done++;
        pthread_mutex_unlock(&c->mu);
        snprintf(msg, sizeof msg, "done: best validation Sharpe %.3f, test Sharpe %.3f", r.best_val_sharpe,
                 r.test.strategy.sharpe);
    }
    say(&j, msg);
    return VP_OK;
}
