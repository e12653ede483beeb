/* What the training loop shows while it runs: its own progress line or a sink's, the first
 * line at once with the warm-up notice, the graph-capture notice before the first iteration,
 * the clock restarted after it (so the ETA and the CPU projection time only real
 * iterations), and notes on lines of their own. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "learn/train_progress.h"

/* The figures of counters c. */
static vp_progress_stats stats_of(const vp_train_progress* p, const vp_train_counters* c) {
    vp_progress_stats st = {c->iteration, c->env_steps, c->learner_steps, p->last_loss, p->last_eps, p->last_val};
    return st;
}

void vp_train_progress_note(vp_train_progress* p, int level, const char* msg) {
    if (p->sink) p->sink->note(p->sink->ctx, msg);
    else if (p->own) vp_progress_note(&p->line, msg);
    else if (level >= 0) vp_log((vp_log_level)level, "%s", msg);
}

void vp_train_progress_begin(vp_train_progress* p, const vp_train_opts* o, const vp_config* cfg, const vp_backend* b,
                             const vp_train_counters* at, const char* note) {
    memset(p, 0, sizeof *p);
    p->last_loss = p->last_eps = p->last_val = NAN;
    p->sink = o->progress_sink;
    const double now = vp_clock_s();
    if (!p->sink && o->progress) {
        vp_progress_stats st = stats_of(p, at);
        vp_progress_init(&p->line, o->progress, o->progress_tty, cfg->train.iterations, o->progress_interval_s, now, &st);
        p->line.warn_cpu = vp_backend_get_kind(b) == VP_BACKEND_CPU;
        p->own = 1;
    }
    if (!p->sink && !p->own) return;
    if (note && note[0]) vp_train_progress_note(p, -1, note);
    if (p->own) {
        // the first line at once: nothing timed yet, no ETA
        vp_progress_stats st = stats_of(p, at);
        vp_progress_update(&p->line, &st, now);
    }
}

void vp_train_progress_first(vp_train_progress* p, const vp_backend* b) {
    if (vp_backend_get_kind(b) == VP_BACKEND_CUDA)
        vp_train_progress_note(p, -1, "compiling: capturing the iteration as a CUDA graph (the first iteration)...");
}

void vp_train_progress_iteration(vp_train_progress* p, const vp_train_counters* c) {
    vp_progress_stats st = stats_of(p, c);
    if (p->sink) {
        p->sink->update(p->sink->ctx, &st);
        return;
    }
    if (!p->own) return;
    const double now = vp_clock_s();
    // the first iteration (warm-up aftermath, graph capture) is not timed
    if (!p->rebased) {
        vp_progress_rebase(&p->line, c->iteration, c->env_steps, now);
        p->rebased = 1;
    }
    vp_progress_update(&p->line, &st, now);
}

void vp_train_progress_end(vp_train_progress* p) {
    if (p->own) vp_progress_finish(&p->line);
}
