/* The walk-forward's progress line, the same printer as training's (vulpes/run.h): the fold
 * shown, the folds done and running, the fold's iteration, the summed env steps and their
 * rate, the last loss, epsilon and validation Sharpe, the elapsed time and the ETA over the
 * iterations of every fold this call runs; the fold lines ("fold 2/5: ...") as whole lines
 * of their own. Folds in parallel report from their threads, so everything is under a lock.
 * The first line comes as soon as the folds start; the clock restarts after the first
 * iteration (warm-up and graph capture untimed); on the CPU a GPU-sized walk-forward is
 * warned of once. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/walkforward_impl.h"

vp_status vp_wf_progress_start(vp_wf_ctx* c, int64_t to_run) {
    vp_wf_progress* p = &c->prog;
    memset(p, 0, sizeof *p);
    if (!c->opts->progress) return VP_OK;
    p->iters = (int64_t*)calloc((size_t)c->n_folds + 1, sizeof(int64_t));
    p->env = (int64_t*)calloc((size_t)c->n_folds + 1, sizeof(int64_t));
    if (!p->iters || !p->env || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->iters);
        free(p->env);
        memset(p, 0, sizeof *p);
        VP_FAIL(VP_ERR_OOM, "walk-forward: the progress line of %lld folds", (long long)c->n_folds);
    }
    int64_t first = -1;
    for (int64_t k = 0; k < c->n_folds; ++k) {
        if (vp_wf_fold_is_done(c, k)) p->done++;
        else if (first < 0) first = k;
    }
    // the printer: every fold's iterations are the work; plain lines every 10 s unless asked
    const int tty = c->opts->progress_tty;
    const double every = c->opts->progress_interval_s > 0 ? c->opts->progress_interval_s : tty ? 0.25 : 10.0;
    const double now = vp_clock_s();
    vp_progress_init(&p->line, c->opts->progress, tty, to_run * c->cfg->train.iterations, every, now, NULL);
    p->line.warn_cpu = vp_backend_get_kind(c->b) == VP_BACKEND_CPU;
    p->on = 1;
    // the first line at once
    vp_progress_stats st = {0, 0, 0, NAN, NAN, NAN};
    vp_progress_folds f = {first + 1, c->n_folds, p->done, 0, c->cfg->train.iterations, 0};
    if (first >= 0 && to_run > 0) vp_progress_update_folds(&p->line, &st, &f, now);
    return VP_OK;
}

void vp_wf_progress_stop(vp_wf_ctx* c) {
    vp_wf_progress* p = &c->prog;
    if (!p->on) return;
    vp_progress_finish(&p->line);
    pthread_mutex_destroy(&p->mu);
    free(p->iters);
    free(p->env);
    memset(p, 0, sizeof *p);
}

void vp_wf_progress_note(vp_wf_ctx* c, int64_t k, const char* msg) {
    vp_wf_progress* p = &c->prog;
    char line[1200];
    if (k >= 0) snprintf(line, sizeof line, "fold %lld/%lld: %s", (long long)(k + 1), (long long)c->n_folds, msg);
    else snprintf(line, sizeof line, "walk-forward: %s", msg);
    if (!p->on) {
        // no progress line: the stream alone, still one whole line
        FILE* out = c->opts->progress;
        if (!out) return;
        flockfile(out);
        fprintf(out, "%s\n", line);
        fflush(out);
        funlockfile(out);
        return;
    }
    pthread_mutex_lock(&p->mu);
    vp_progress_note(&p->line, line);
    pthread_mutex_unlock(&p->mu);
}

void vp_wf_progress_fold_begin(vp_wf_ctx* c, int64_t k) {
    vp_wf_progress* p = &c->prog;
    if (!p->on) return;
    pthread_mutex_lock(&p->mu);
    p->running++;
    // a fold that starts over (after a stop) counts from 0 again
    p->work -= p->iters[k], p->env_steps -= p->env[k];
    p->iters[k] = p->env[k] = 0;
    pthread_mutex_unlock(&p->mu);
}

void vp_wf_progress_fold_update(vp_wf_ctx* c, int64_t k, const vp_progress_stats* st) {
    vp_wf_progress* p = &c->prog;
    if (!p->on) return;
    pthread_mutex_lock(&p->mu);
    // the fold's counters into the sums
    p->work += st->iteration - p->iters[k];
    p->env_steps += st->env_steps - p->env[k];
    p->iters[k] = st->iteration, p->env[k] = st->env_steps;
    const double now = vp_clock_s();
    if (!p->rebased && p->work >= 1) {
        vp_progress_rebase(&p->line, p->work, p->env_steps, now);
        p->rebased = 1;
    }
    vp_progress_stats sum = *st;
    sum.env_steps = p->env_steps;
    vp_progress_folds f = {k + 1, c->n_folds, p->done, p->running, c->cfg->train.iterations, p->work};
    vp_progress_update_folds(&p->line, &sum, &f, now);
    pthread_mutex_unlock(&p->mu);
}

void vp_wf_progress_fold_end(vp_wf_ctx* c, int64_t k, int finished) {
    vp_wf_progress* p = &c->prog;
    if (!p->on) return;
    (void)k;
    pthread_mutex_lock(&p->mu);
    p->running--;
    p->done += finished != 0;
    pthread_mutex_unlock(&p->mu);
}
