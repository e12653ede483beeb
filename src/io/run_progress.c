/* The progress line: one line redrawn with '\r' on a terminal, plain periodic lines
 * otherwise (iteration, env steps, steps/s, loss, epsilon, validation Sharpe, ETA; a
 * walk-forward's fold and folds done before them), and the warning for a GPU-sized run on
 * the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vulpes/run.h"

double vp_clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char* vp_format_count(double v, char* buf, size_t n) {
    static const char* suffix[] = {"", "k", "M", "G", "T"};
    int i = 0;
    double a = fabs(v);
    // three significant digits under the largest fitting suffix
    while (a >= 999.5 && i < 4) a /= 1000.0, v /= 1000.0, ++i;
    if (i == 0) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.*f%s", a < 9.995 ? 2 : a < 99.95 ? 1 : 0, v, suffix[i]);
    return buf;
}

const char* vp_format_duration(double s, char* buf, size_t n) {
    if (!(s >= 0) || isinf(s)) {
        snprintf(buf, n, "-");
        return buf;
    }
    long long t = (long long)(s + 0.5);
    if (t < 60) snprintf(buf, n, "%llds", t);
    else if (t < 3600) snprintf(buf, n, "%lldm%02llds", t / 60, t % 60);
    else if (t < 86400) snprintf(buf, n, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
    else snprintf(buf, n, "%lldd%02lldh", t / 86400, (t % 86400) / 3600);
    return buf;
}

void vp_text_append(char* buf, size_t n, size_t* k, const char* fmt, ...) {
    if (*k >= n) return;
    va_list ap;
    va_start(ap, fmt);
    const int m = vsnprintf(buf + *k, n - *k, fmt, ap);
    va_end(ap);
    *k = m < 0 ? n : (*k + (size_t)m < n ? *k + (size_t)m : n);
}

const char* vp_plural(int64_t n, const char* one, const char* many) { return n == 1 || n == -1 ? one : many; }

void vp_progress_init(vp_progress* p, FILE* out, int tty, int64_t total, double interval_s, double now_s,
                      const vp_progress_stats* start) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
    p->total = total;
    p->interval_s = interval_s;
    p->t_start = p->t_init = now_s;
    p->t_print = now_s;
    p->iter_start = p->work_init = start ? start->iteration : 0;
    p->env_print = start ? start->env_steps : 0;
}

void vp_progress_rebase(vp_progress* p, int64_t work, int64_t env_steps, double now_s) {
    if (!p) return;
    p->t_start = now_s;
    p->iter_start = work;
    p->t_print = now_s;
    p->env_print = env_steps;
}

/* The progress text of `st` at `now_s` into buf[n]: the fold part when f is given, the
 * training figures, the elapsed time on a terminal (plain lines carry it in front), the ETA
 * of `work` done towards p->total. */
static void format_line(const vp_progress* p, const vp_progress_stats* st, const vp_progress_folds* f, int64_t work,
                        double now_s, char* buf, size_t n) {
    char env[32], rate[32], eta[32], loss[32], eps[32], sharpe[32], el[32], head[128] = "", tail[64] = "";
    // env steps per second since the last print, ETA from the pace since init (or the rebase)
    double dt = now_s - p->t_print;
    if (dt > 0 && st->env_steps >= p->env_print) vp_format_count((double)(st->env_steps - p->env_print) / dt, rate, sizeof rate);
    else snprintf(rate, sizeof rate, "-");
    int64_t done = work - p->iter_start;
    double eta_s = done > 0 ? (double)(p->total - work) * (now_s - p->t_start) / (double)done : NAN;
    vp_format_duration(eta_s, eta, sizeof eta);
    // NaN shows as "-"
    if (isnan(st->loss)) snprintf(loss, sizeof loss, "-");
    else snprintf(loss, sizeof loss, "%.4g", st->loss);
    if (isnan(st->epsilon)) snprintf(eps, sizeof eps, "-");
    else snprintf(eps, sizeof eps, "%.3f", st->epsilon);
    if (isnan(st->val_sharpe)) snprintf(sharpe, sizeof sharpe, "-");
    else snprintf(sharpe, sizeof sharpe, "%.2f", st->val_sharpe);
    // the iterations of the run, or of the shown fold with the folds before them
    const int64_t of = f ? f->fold_iterations : p->total;
    if (f) {
        int at = snprintf(head, sizeof head, "fold %lld/%lld (%lld done", (long long)f->fold, (long long)f->n_folds,
                          (long long)f->done);
        if (f->running > 1 && at > 0 && (size_t)at < sizeof head)
            at += snprintf(head + at, sizeof head - (size_t)at, ", %lld running", (long long)f->running);
        if (at > 0 && (size_t)at < sizeof head) snprintf(head + at, sizeof head - (size_t)at, ") | ");
    }
    if (p->tty) snprintf(tail, sizeof tail, " | elapsed %s", vp_format_duration(now_s - p->t_init, el, sizeof el));
    double pct = of > 0 ? 100.0 * (double)st->iteration / (double)of : 0.0;
    snprintf(buf, n, "%siter %lld/%lld (%.1f%%) | env %s | %s steps/s | loss %s | eps %s | val Sharpe %s%s | ETA %s", head,
             (long long)st->iteration, (long long)of, pct, vp_format_count((double)st->env_steps, env, sizeof env), rate,
             loss, eps, sharpe, tail, eta);
}

/* Writes a formatted line: redrawn in place on a terminal, with the elapsed time in front otherwise. */
static void draw(vp_progress* p, const char* line, double now_s) {
    if (p->tty) {
        // redraw in place, blanking what a longer previous line left
        int len = (int)strlen(line);
        int pad = p->last_len > len ? p->last_len - len : 0;
        fprintf(p->out, "\r%s%*s", line, pad, "");
        p->last_len = len;
    } else {
        char el[32];
        fprintf(p->out, "[%s] %s\n", vp_format_duration(now_s - p->t_init, el, sizeof el), line);
    }
    fflush(p->out);
}

/* The CPU projection, once: after VP_PROGRESS_CPU_MEASURE timed iterations or 5 s of one. */
static void cpu_check(vp_progress* p, int64_t work, double now_s) {
    if (!p->warn_cpu || p->warned) return;
    const int64_t timed = work - p->iter_start;
    const double dt = now_s - p->t_start;
    if (timed < 1 || (timed < VP_PROGRESS_CPU_MEASURE && dt < 5.0)) return;
    p->warned = 1;
    char msg[640];
    if (vp_progress_cpu_advice(dt / (double)timed, timed, p->total - p->work_init, msg, sizeof msg)) vp_progress_note(p, msg);
}

/* One update of either kind: work is what the ETA counts. */
static int update(vp_progress* p, const vp_progress_stats* st, const vp_progress_folds* f, int64_t work, double now_s) {
    if (!p || !p->out || !st) return 0;
    int printed = 0;
    // the first update, then one per interval, and the last
    if (!p->printed || now_s - p->t_print >= p->interval_s || work >= p->total) {
        char line[640];
        format_line(p, st, f, work, now_s, line, sizeof line);
        draw(p, line, now_s);
        p->t_print = now_s;
        p->env_print = st->env_steps;
        p->printed++;
        printed = 1;
    }
    cpu_check(p, work, now_s);
    return printed;
}

int vp_progress_update(vp_progress* p, const vp_progress_stats* st, double now_s) {
    return update(p, st, NULL, st ? st->iteration : 0, now_s);
}

int vp_progress_update_folds(vp_progress* p, const vp_progress_stats* st, const vp_progress_folds* f, double now_s) {
    if (!f) return 0;
    return update(p, st, f, f->work, now_s);
}

void vp_progress_note(vp_progress* p, const char* msg) {
    if (!p || !p->out || !msg) return;
    // blank the progress line first; the next update redraws it
    if (p->tty && p->last_len > 0) fprintf(p->out, "\r%*s\r", p->last_len, "");
    fprintf(p->out, "%s\n", msg);
    fflush(p->out);
    p->last_len = 0;
}

void vp_progress_finish(vp_progress* p) {
    if (!p || !p->out) return;
    if (p->tty && p->last_len > 0) fputc('\n', p->out);
    fflush(p->out);
    p->last_len = 0;
}

int vp_progress_cpu_advice(double s_per_iteration, int64_t measured, int64_t iterations, char* buf, size_t n) {
    if (!buf || n == 0) return 0;
    buf[0] = '\0';
    const double total_s = s_per_iteration * (double)iterations;
    if (!(total_s > VP_PROGRESS_CPU_LIMIT_S) || measured < 1) return 0;
    char per[32], all[32];
    // the measured time with three significant digits, the projection as a duration
    if (s_per_iteration >= 1.0) snprintf(per, sizeof per, "%.3g s", s_per_iteration);
    else snprintf(per, sizeof per, "%.3g ms", 1e3 * s_per_iteration);
    snprintf(buf, n,
             "warning: this config is sized for a GPU: on the CPU an iteration takes %s (measured over %lld %s), "
             "so %lld %s take about %s (over %.0f minutes); examples/eurusd.yaml is the CPU example (a 64-wide "
             "network, batch 256, 32 envs: minutes on 2 cores), or run on a GPU (--backend cuda)",
             per, (long long)measured, vp_plural(measured, "iteration", "iterations"), (long long)iterations,
             vp_plural(iterations, "iteration", "iterations"), vp_format_duration(total_s, all, sizeof all),
             VP_PROGRESS_CPU_LIMIT_S / 60.0);
    return 1;
}
