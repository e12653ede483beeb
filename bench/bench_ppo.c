/* `vulpes bench ppo`: PPO's collection, its update and whole iterations (docs/ppo.md).
 *
 * Per configuration one trainer (train.algo ppo) on a synthetic GBM market (200 000 bars on
 * CUDA, 20 000 on the CPU or with --quick), validated first: a few iterations, finite
 * statistics, and no copy, allocation or sync across the captured iterations. Then three
 * captured graphs of its bodies, each timed as a warm-up launch and the median of 5 launches
 * between two syncs (host clock):
 *   collect    the collection of n_envs x T steps with the policy (the span encoded once where
 *              that is fewer rows, the heads, the sampler, the env step) and GAE: env steps/s;
 *   learn      epochs x (a permutation and minibatches updates of M rows): per update, rows/s;
 *   iteration  both, as vp_ppo_trainer_iterate replays them: iterations/s and env steps/s end
 *              to end, with the split.
 * Each line gives the FLOPs and bytes per env step (collection) or per row (update) of
 * bench_ppo_floor.c, and on CUDA the fraction of their floor reached.
 * Configurations: T = ppo.rollout_steps (128) and ppo.epochs (4) at their defaults. CUDA: the
 * default model at 4096 envs with the default 4 minibatches (M = 131072) and at 65536 envs
 * with 64 (M = 131072 again: 4 would make M = 2.1 M rows, whose backward activations, about
 * 134 KB a row, 281 GB, exceed the GPU's memory); --quick 1024 envs, T 32. CPU: the network of
 * examples/eurusd.yaml (H 64) at 32 and 256 envs, 4 minibatches; --quick 32 envs, T 16.
 * Prints a table and JSON lines ("bench":"ppo"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_ppo_floor.h"
#include "vulpes/ppo.h"
#include "vulpes/synth.h"
#include "vulpes/train.h"

#define VALIDATE_ITERS 3  /* iterations between the counter readings */

/* Which part of an iteration a graph holds. */
typedef enum part { PART_ALL = 0, PART_COLLECT, PART_LEARN } part;

typedef struct ppo_ctx {
    vp_ppo_trainer* t;
    part what;
    int reps; /* repetitions per launch */
} ppo_ctx;

/* `reps` iterations, or only their collection (with GAE) or their epochs. */
static vp_status ppo_body(vp_backend* b, void* ctx) {
    ppo_ctx* c = (ppo_ctx*)ctx;
    for (int r = 0; r < c->reps; ++r) {
        if (c->what != PART_LEARN) VP_TRY(vp_ppo_collect_body(b, c->t));
        if (c->what == PART_COLLECT) continue;
        for (int64_t e = 0; e < c->t->pc.epochs; ++e) VP_TRY(vp_ppo_epoch_body(b, c->t));
    }
    return VP_OK;
}

/* Median milliseconds per repetition of a part, as a captured graph. */
static vp_status time_part(vp_ppo_trainer* t, part what, int reps, double* ms) {
    ppo_ctx c = {t, what, reps};
    return vp_bench_time_body(t->backend, ppo_body, &c, 1, reps, ms);
}

/* One measured configuration. */
typedef struct ppo_case {
    int64_t n_envs, steps, minibatches;
    int small; /* the network of examples/eurusd.yaml instead of the default */
} ppo_case;

/* The configuration of one case; prints why when it is invalid. */
static vp_status bench_cfg(vp_config* c, const ppo_case* k) {
    vp_config_defaults(c);
    snprintf(c->train.algo, sizeof c->train.algo, "ppo");
    c->env.n_envs = k->n_envs;
    c->env.episode_bars = 1024;
    c->features.window = 64;
    c->ppo.rollout_steps = k->steps;
    c->ppo.minibatches = k->minibatches;
    // the DQN keys PPO ignores, kept valid for the config's own rules (as bench train sets them)
    c->replay.capacity = k->n_envs > 1048576 / 4 ? 4 * k->n_envs : 1048576;
    const int64_t per_env = c->learn.n_step * k->n_envs;
    c->replay.warmup = 4 * c->learn.batch > per_env ? 4 * c->learn.batch : per_env;
    if (k->small) {
        c->model.hidden = 64, c->model.mamba_head_dim = 32, c->model.head_hidden = 64;
        c->model.iqn_taus = 16, c->model.iqn_target_taus = 16, c->model.iqn_cos = 32;
        c->replay.capacity = 65536;
    }
    vp_status s = vp_config_check(c);
    if (s != VP_OK)
        fprintf(stderr, "vulpes bench ppo: the configuration of %lld envs, T = %lld is invalid: %s\n",
                (long long)k->n_envs, (long long)k->steps, vp_last_error());
    return s;
}

/* Builds a trainer and checks a few iterations; prints why and frees it on failure. */
static int trainer_ready(vp_ppo_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    vp_runtime_counters c0, c1;
    double st[VP_PPO_STAT_COUNT], gn = 0.0;
    vp_status s = vp_ppo_trainer_init(t, b, cfg, d);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench ppo: set-up of %lld envs failed: %s\n", (long long)cfg->env.n_envs,
                vp_last_error());
        return 0;
    }
    s = vp_ppo_trainer_iterate(t, 1);
    if (s == VP_OK) s = vp_backend_sync(b);
    vp_backend_counters(b, &c0);
    if (s == VP_OK) s = vp_ppo_trainer_iterate(t, VALIDATE_ITERS);
    vp_backend_counters(b, &c1);
    if (s == VP_OK) s = vp_ppo_trainer_stats(t, st, &gn);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench ppo: the first iterations of %lld envs failed: %s\n",
                (long long)cfg->env.n_envs, vp_last_error());
        vp_ppo_trainer_free(t);
        return 0;
    }
    int finite = isfinite(gn);
    for (int i = 0; i < VP_PPO_STAT_COUNT; ++i) finite = finite && isfinite(st[i]);
    if (c1.copies != c0.copies || c1.allocs != c0.allocs || c1.syncs != c0.syncs || !finite) {
        fprintf(stderr, "vulpes bench ppo: validation of %lld envs failed (%d iterations: copies +%lld, allocs "
                "+%lld, syncs +%lld; policy loss %g, value loss %g, entropy %g, gradient norm %g)\n",
                (long long)cfg->env.n_envs, VALIDATE_ITERS, (long long)(c1.copies - c0.copies),
                (long long)(c1.allocs - c0.allocs), (long long)(c1.syncs - c0.syncs), st[VP_PPO_STAT_PG],
                st[VP_PPO_STAT_V], st[VP_PPO_STAT_ENT], gn);
        vp_ppo_trainer_free(t);
        return 0;
    }
    return 1;
}

/* Repetitions per launch: about 2^24 env steps of collection, one iteration or learning phase
 * on CUDA (each is a tenth of a second or more there), one on the CPU; --iters overrides. */
static int reps_of(int cuda, const vp_bench_opts* o, part what, int64_t env_steps) {
    if (o->iters > 0) return o->iters;
    if (!cuda || what != PART_COLLECT) return 1;
    const int64_t cap = ((int64_t)1 << 24) / env_steps;
    return (int)(cap < 1 ? 1 : cap > 10 ? 10 : cap);
}

/* The fields every JSON line of a case shares. */
static void json_head(FILE* js, const char* what, vp_backend* b, const vp_ppo_trainer* t) {
    const vp_model_cfg* m = &t->net.enc.cfg;
    fprintf(js, "{\"bench\":\"ppo\",\"what\":\"%s\",\"backend\":\"%s\",\"device\":\"%s\",\"n_envs\":%lld,"
            "\"rollout_steps\":%lld,\"epochs\":%lld,\"minibatches\":%lld,\"minibatch\":%lld,\"path\":\"%s\","
            "\"span_rows\":%lld,\"n_features\":%d,\"n_portfolio\":%d,\"window\":%d,\"hidden\":%d,\"encoder\":%d,"
            "\"mamba_state\":%d,\"mamba_head_dim\":%d,\"mamba_conv\":%d,\"head_hidden\":%d,\"parameters\":%lld,",
            what, vp_backend_get_kind(b) == VP_BACKEND_CUDA ? "cuda" : "cpu", vp_backend_name(b),
            (long long)t->env.n_envs, (long long)t->pc.rollout_steps, (long long)t->pc.epochs,
            (long long)t->pc.minibatches, (long long)vp_tensor_numel(&t->m_bar),
            t->encode_once ? "encode_once" : "stepwise", (long long)(t->encode_once ? t->span_rows : 0),
            m->n_features, m->n_portfolio, m->window, m->hidden, (int)m->encoder, m->mamba_state,
            m->mamba_head_dim, m->mamba_conv, m->head_hidden, (long long)vp_ppo_net_numel(&t->net));
}

/* The floor fraction as printed: "-" off CUDA. */
static const char* frac_text(int cuda, double frac, char* buf, size_t n) {
    if (!cuda) return "-";
    snprintf(buf, n, "%.3f", frac);
    return buf;
}

/* Times one case's collection, learning and iteration; prints its rows. Returns 0 on failure. */
static int bench_case(vp_backend* b, const vp_train_data* d, const ppo_case* k, const vp_bench_opts* o, FILE* js) {
    vp_config cfg;
    vp_ppo_trainer t;
    if (bench_cfg(&cfg, k) != VP_OK || !trainer_ready(&t, b, &cfg, d)) return 0;
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int64_t E = t.env.n_envs, T = t.pc.rollout_steps, N = E * T, M = vp_tensor_numel(&t.m_bar);
    const int64_t U = t.pc.epochs * t.pc.minibatches;
    const vp_bench_ppo_work w = vp_bench_ppo_count(&t);
    double col = 0, lrn = 0, all = 0;
    vp_status s = time_part(&t, PART_COLLECT, reps_of(cuda, o, PART_COLLECT, N), &col);
    if (s == VP_OK) s = time_part(&t, PART_LEARN, reps_of(cuda, o, PART_LEARN, N), &lrn);
    if (s == VP_OK) s = time_part(&t, PART_ALL, reps_of(cuda, o, PART_ALL, N), &all);
    double st[VP_PPO_STAT_COUNT], gn = 0.0;
    if (s == VP_OK) s = vp_ppo_trainer_stats(&t, st, &gn);
    if (s == VP_OK && !(isfinite(st[VP_PPO_STAT_PG]) && isfinite(st[VP_PPO_STAT_V]) && isfinite(gn))) {
        fprintf(stderr, "vulpes bench ppo: %lld envs: the statistics after timing are not finite (policy loss %g, "
                "value loss %g, gradient norm %g)\n", (long long)E, st[VP_PPO_STAT_PG], st[VP_PPO_STAT_V], gn);
        vp_ppo_trainer_free(&t);
        return 0;
    }
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench ppo: timing of %lld envs failed: %s\n", (long long)E, vp_last_error());
        vp_ppo_trainer_free(&t);
        return 0;
    }
    const char* be = cuda ? "cuda" : "cpu";
    const char* path = t.encode_once ? "once" : "step";
    char fb[16];
    // collection: env steps/s
    const double col_eps = (double)N / (col * 1e-3), col_frac = w.col_floor_s * col_eps;
    printf("%-5s %-9s %6lld %4lld %3lld %7lld %-5s %12.4g %-11s %10.3f %9.4f %8.0f %6s\n", be, "collect",
           (long long)E, (long long)T, (long long)t.pc.minibatches, (long long)M, path, col_eps, "env steps/s", col,
           w.col_flops * 1e-6, w.col_bytes, frac_text(cuda, col_frac, fb, sizeof fb));
    json_head(js, "collect", b, &t);
    fprintf(js, "\"env_steps_per_s\":%.6g,\"ms_per_collect\":%.6g,\"windows_per_env_step\":%.6g,"
            "\"flop_per_env_step\":%.6g,\"bytes_per_env_step\":%.6g,\"floor_s_per_env_step\":%.6g,\"floor_frac\":%.6g}\n",
            col_eps, col, w.enc_rows, w.col_flops, w.col_bytes, w.col_floor_s, cuda ? col_frac : 0.0);
    // the updates: ms and rows/s per minibatch update (the learning phase over its updates)
    const double upd = lrn / (double)U, rows = (double)M / (upd * 1e-3), upd_frac = w.upd_floor_s * rows;
    printf("%-5s %-9s %6lld %4lld %3lld %7lld %-5s %12.4g %-11s %10.3f %9.4f %8.0f %6s  (%lld updates: %.3f ms, "
           "%.3g TFLOP/s)\n", be, "update", (long long)E, (long long)T, (long long)t.pc.minibatches, (long long)M, "-",
           rows, "rows/s", upd, w.upd_flops * 1e-6, w.upd_bytes, frac_text(cuda, upd_frac, fb, sizeof fb),
           (long long)U, lrn, w.upd_flops * rows * 1e-12);
    json_head(js, "update", b, &t);
    fprintf(js, "\"updates\":%lld,\"learn_ms\":%.6g,\"ms_per_update\":%.6g,\"rows_per_s\":%.6g,\"flop_per_row\":%.6g,"
            "\"bytes_per_row\":%.6g,\"floor_s_per_row\":%.6g,\"floor_frac\":%.6g,\"tflops\":%.6g}\n", (long long)U, lrn,
            upd, rows, w.upd_flops, w.upd_bytes, w.upd_floor_s, cuda ? upd_frac : 0.0, w.upd_flops * rows * 1e-12);
    // whole iterations: env steps/s end to end, the split, the floor of both parts together
    const double eps = (double)N / (all * 1e-3), frac = col / (col + lrn);
    const double floor_s = (double)N * w.col_floor_s + (double)(t.pc.epochs * N) * w.upd_floor_s;
    printf("%-5s %-9s %6lld %4lld %3lld %7lld %-5s %12.4g %-11s %10.3f %9s %8s %6s  (collect %.3f ms + learn %.3f ms: "
           "%.0f %% collection; %.4g iterations/s)\n", be, "iteration", (long long)E, (long long)T,
           (long long)t.pc.minibatches, (long long)M, path, eps, "env steps/s", all, "-", "-",
           frac_text(cuda, floor_s / (all * 1e-3), fb, sizeof fb), col, lrn, 100.0 * frac, 1e3 / all);
    json_head(js, "iteration", b, &t);
    fprintf(js, "\"env_steps_per_s\":%.6g,\"iterations_per_s\":%.6g,\"ms_per_iteration\":%.6g,\"collect_ms\":%.6g,"
            "\"learn_ms\":%.6g,\"collect_frac\":%.4f,\"floor_s_per_iteration\":%.6g,\"floor_frac\":%.6g}\n", eps,
            1e3 / all, all, col, lrn, frac, floor_s, cuda ? floor_s / (all * 1e-3) : 0.0);
    fflush(js);
    fflush(stdout);
    vp_ppo_trainer_free(&t);
    return 1;
}

/* A synthetic GBM market of n bars as training data; prints why on failure. */
static int make_market(int64_t n, vp_train_data* d) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_GBM);
    vp_bars bars;
    vp_config cfg;
    vp_config_defaults(&cfg);
    cfg.features.window = 64;
    if (vp_synth_generate(&sc, n, &bars, NULL) != VP_OK || vp_train_data_from_bars(d, &cfg, &bars) != VP_OK) {
        fprintf(stderr, "vulpes bench ppo: market set-up (%lld bars) failed: %s\n", (long long)n, vp_last_error());
        return 0;
    }
    return 1;
}

int vp_bench_ppo(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    vp_train_data d;
    if (!make_market(o->quick || !cuda ? 20000 : 200000, &d)) return 1;
    vp_config def;
    vp_config_defaults(&def);
    printf("ppo on %s: synthetic GBM market of %lld bars, training span [%lld, %lld); T = ppo.rollout_steps, "
           "epochs %lld, M = n_envs x T / minibatches rows per update\n", vp_backend_name(b), (long long)d.bars.n,
           (long long)d.split.train.begin, (long long)d.split.train.end, (long long)def.ppo.epochs);
    printf("MFLOP/u, B/u: GEMM FLOPs and bytes per env step (collect) or per row (update); floor: the fraction of their\n"
           "H200 floor reached (CUDA)\n");
    printf("%-5s %-9s %6s %4s %3s %7s %-5s %12s %-11s %10s %9s %8s %6s\n", "be", "what", "n_envs", "T", "mb", "M",
           "path", "per second", "unit", "ms", "MFLOP/u", "B/u", "floor");
    const int64_t T = def.ppo.rollout_steps, mb = def.ppo.minibatches;
    const ppo_case full_cuda[2] = {{4096, T, mb, 0}, {65536, T, 64, 0}}, quick_cuda[1] = {{1024, 32, mb, 0}};
    const ppo_case full_cpu[2] = {{32, T, mb, 1}, {256, T, mb, 1}}, quick_cpu[1] = {{32, 16, mb, 1}};
    const ppo_case* cases = cuda ? (o->quick ? quick_cuda : full_cuda) : (o->quick ? quick_cpu : full_cpu);
    const int n = o->quick ? 1 : 2;
    FILE* js = vp_bench_json_open(o);
    int ok = 1;
    for (int i = 0; i < n && ok; ++i) ok = bench_case(b, &d, &cases[i], o, js);
    vp_bench_json_close(js);
    vp_train_data_free(&d);
    return ok ? 0 : 1;
}
