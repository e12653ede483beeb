/* The progress line: one line redrawn with '\r' on a terminal, plain periodic lines
 * otherwise (iteration, env steps, steps/s, loss, epsilon, validation Sharpe, ETA). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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

void vp_progress_init(vp_progress* p, FILE* out, int tty, int64_t total, double interval_s, double now_s,
                      const vp_progress_stats* start) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
    p->total = total;
    p->interval_s = interval_s;
    p->t_start = now_s;
    p->t_print = now_s;
    p->iter_start = start ? start->iteration : 0;
    p->env_print = start ? start->env_steps : 0;
}

/* The progress text of `st` at `now_s`, written into buf[n]. */
static void format_line(const vp_progress* p, const vp_progress_stats* st, double now_s, char* buf, size_t n) {
    char env[32], rate[32], eta[32], loss[32], eps[32], sharpe[32];
    // env steps per second since the last print, ETA from the pace since init
    double dt = now_s - p->t_print;
    if (dt > 0 && st->env_steps >= p->env_print) vp_format_count((double)(st->env_steps - p->env_print) / dt, rate, sizeof rate);
    else snprintf(rate, sizeof rate, "-");
    int64_t done = st->iteration - p->iter_start;
    double eta_s = done > 0 ? (double)(p->total - st->iteration) * (now_s - p->t_start) / (double)done : NAN;
    vp_format_duration(eta_s, eta, sizeof eta);
    // NaN shows as "-"
    if (isnan(st->loss)) snprintf(loss, sizeof loss, "-");
    else snprintf(loss, sizeof loss, "%.4g", st->loss);
    if (isnan(st->epsilon)) snprintf(eps, sizeof eps, "-");
    else snprintf(eps, sizeof eps, "%.3f", st->epsilon);
    if (isnan(st->val_sharpe)) snprintf(sharpe, sizeof sharpe, "-");
    else snprintf(sharpe, sizeof sharpe, "%.2f", st->val_sharpe);
    double pct = p->total > 0 ? 100.0 * (double)st->iteration / (double)p->total : 0.0;
    snprintf(buf, n, "iter %lld/%lld (%.1f%%) | env %s | %s steps/s | loss %s | eps %s | val Sharpe %s | ETA %s",
             (long long)st->iteration, (long long)p->total, pct, vp_format_count((double)st->env_steps, env, sizeof env),
             rate, loss, eps, sharpe, eta);
}

int vp_progress_update(vp_progress* p, const vp_progress_stats* st, double now_s) {
    if (!p || !p->out || !st) return 0;
    // the first update, then one per interval, and the last
    if (p->printed && now_s - p->t_print < p->interval_s && st->iteration < p->total) return 0;
    char line[512];
    format_line(p, st, now_s, line, sizeof line);
    if (p->tty) {
        // redraw in place, blanking what a longer previous line left
        int len = (int)strlen(line);
        int pad = p->last_len > len ? p->last_len - len : 0;
        fprintf(p->out, "\r%s%*s", line, pad, "");
        p->last_len = len;
    } else {
        char el[32];
        fprintf(p->out, "[%s] %s\n", vp_format_duration(now_s - p->t_start, el, sizeof el), line);
    }
    fflush(p->out);
    p->t_print = now_s;
    p->env_print = st->env_steps;
    p->printed++;
    return 1;
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
