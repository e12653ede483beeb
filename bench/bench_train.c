/* `vulpes bench train`: collection with policy inference and whole training iterations.
 *
 * Collection: env steps per second of vp_collector_collect (train.collect_steps = S steps
 * of every env: the span encoded once where that is fewer rows, then per step the heads,
 * epsilon-greedy act, env step, replay push; else S single steps) for S in {1, 8, 64} and
 * n_envs in {4096, 65536, 262144} with the default model on CUDA (--quick: S {1, 64},
 * 4096 envs); on the CPU S {1, 64} at 256 envs with the small model of
 * examples/eurusd.yaml (H 64). Each line gives the path taken ("shared": encode once with
 * shared rows, vulpes/model_span.h), the GEMM FLOPs and the
 * counted bytes per env step (bench_train_floor.c), and on CUDA the fraction of the floor
 * reached: the larger of FLOPs over the H200's measured TF32 GEMM ceiling and bytes over
 * its memory-bound op rate (docs/perf.md), against the time measured.
 * The span encoding alone ("span", S = 64 at 4096 envs on CUDA, 256 on the CPU): its time with
 * shared rows, windows per second, and its time with each window encoded alone.
 * Iterations: iterations per second of the captured iteration graph (S collection steps +
 * 1 learner step) and the time split between its collection and its learning, each captured
 * and timed alone, with the end-to-end env steps per second; default model, 4096 envs,
 * B = 8192, S = 1 and 64 on CUDA (--quick: 1024 envs, B = 1024); on the CPU the small model
 * (32 envs, B 256, S = 1 and 16). Validation first: a few iterations, finite statistics, no
 * NaN step, and no copy, allocation or sync across iterations. Timing: a warm-up launch,
 * then launches between two syncs (host clock), median of 5. On a synthetic GBM market
 * (200 000 bars on CUDA, 20 000 on the CPU or with --quick); on CUDA the S = 64 collections
 * again on one of 6226 bars, the length of the example data (a span of about 4300 bars).
 * Prints a table and JSON lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_train_floor.h"
#include "learn/collect_impl.h"
#include "vulpes/synth.h"
#include "vulpes/dqn.h"
#include "vulpes/train.h"


/* Which part of an iteration a graph holds. */
typedef enum part { PART_ALL = 0, PART_COLLECT, PART_LEARN } part;

typedef struct train_ctx {
    vp_trainer* t;
    part what;
    int reps; /* iterations per launch */
} train_ctx;

/* `reps` iterations, or only their collection (S steps each) or learning half. */
static vp_status train_body(vp_backend* b, void* ctx) {
    train_ctx* c = (train_ctx*)ctx;
    vp_trainer* t = c->t;
    for (int r = 0; r < c->reps; ++r) {
        if (c->what == PART_ALL) {
            VP_TRY(vp_trainer_iteration_body(b, t));
            continue;
        }
        if (c->what == PART_COLLECT) {
            VP_TRY(vp_collector_collect(&t->collector));
            continue;
        }
        VP_TRY(vp_replay_sample(t->replay, &t->rbatch));
        VP_TRY(vp_learner_draw_taus(&t->learner, &t->batch));
        VP_TRY(vp_learner_step(&t->learner, &t->batch, &t->priorities));
        VP_TRY(vp_replay_update_priorities(t->replay, &t->indices, &t->priorities));
    }
    return VP_OK;
}

/* The parts of an encode-once collection, each timed alone (bench_split). */
typedef enum split_part { SP_ENCODE = 0, SP_GATHER, SP_SCORE, SP_ACT, SP_ENV_PUSH, SP_HANDOVER, SP_COUNT } split_part;

static const char* const SPLIT_NAMES[SP_COUNT] = {"encode", "gather", "score", "act", "env+push", "handover"};

typedef struct split_ctx {
    vp_trainer* t;
    split_part what;
    int reps;
} split_ctx;

/* The parts of split_body, in a loop of sc->reps. */
static vp_status split_run(vp_backend* b, split_ctx* sc) {
    vp_collector* c = &sc->t->collector;
    vp_env* e = c->env;
    vp_tensor q, wend = vp_tensor_1d(e->state.window_end, VP_I32, e->storage.mem, c->n_envs);
    for (int r = 0; r < sc->reps; ++r) {
        // the scores after the first hold the parameters, as a collection's head steps do
        if (r == 1) VP_TRY(vp_policy_hold_params(&c->policy, c->work, 1));
        switch (sc->what) {
        case SP_ENCODE: VP_TRY(vp_collector_encode_span(c)); break;
        case SP_GATHER:
            VP_TRY(vp_collect_gather(b, &c->span_enc, c->span_begin, &c->obs_bar, &c->enc, &wend, &c->window_end));
            break;
        case SP_SCORE: VP_TRY(vp_policy_score(&c->policy, c->work, &c->enc, &c->portfolio, c->n_envs, &q)); break;
        case SP_ACT:
            VP_TRY(vp_policy_score(&c->policy, c->work, &c->enc, &c->portfolio, c->n_envs, &q));
            VP_TRY(vp_collect_act_scaled(b, &c->cfg, &c->policy.layout, &q, &c->step,
                                         c->eps_scale.data ? &c->eps_scale : NULL, &c->actions));
            break;
        case SP_ENV_PUSH: VP_TRY(vp_collector_env_push(c, &c->enc)); break;
        default:
            VP_TRY(vp_collect_handover(b, &c->next_bar, &c->next_portfolio, &c->obs_bar, &c->portfolio, &c->step));
            break;
        }
    }
    return VP_OK;
}

/* `reps` calls of one part of vp_collector_head_step (or of the span encoding). Run alone,
 * each part reads what the last full step left, so its time is the part's own. */
static vp_status split_body(vp_backend* b, void* ctx) {
    split_ctx* sc = (split_ctx*)ctx;
    const vp_status s = split_run(b, sc);
    const vp_status r = vp_policy_hold_params(&sc->t->collector.policy, sc->t->collector.work, 0);
    return s != VP_OK ? s : r;
}

/* Prints the encode-once collection's split: the span encoding, then each part of a head
 * step in ms per step (act is timed with its score, and shown less the score alone). */
static vp_status bench_split(vp_trainer* t, int64_t steps, FILE* js) {
    double ms[SP_COUNT] = {0};
    for (int p = 0; p < SP_COUNT; ++p) {
        const int reps = p == SP_ENCODE ? 1 : (int)steps;
        split_ctx sc = {t, (split_part)p, reps};
        VP_TRY(vp_bench_time_body(t->backend, split_body, &sc, 1, reps, &ms[p]));
    }
    ms[SP_ACT] -= ms[SP_SCORE];
    double head = 0;
    for (int p = 1; p < SP_COUNT; ++p) head += ms[p];
    printf("         split: encode %.3f ms, then per head step %.4f ms:", ms[SP_ENCODE], head);
    for (int p = 1; p < SP_COUNT; ++p) printf(" %s %.4f", SPLIT_NAMES[p], ms[p]);
    printf("\n");
    fprintf(js, "{\"bench\":\"train\",\"what\":\"collect_split\",\"n_envs\":%lld,\"collect_steps\":%lld,"
            "\"encode_ms\":%.6g,\"head_step_ms\":%.6g", (long long)t->collector.n_envs, (long long)steps, ms[SP_ENCODE],
            head);
    for (int p = 1; p < SP_COUNT; ++p) fprintf(js, ",\"%s_ms\":%.6g", SPLIT_NAMES[p], ms[p]);
    fprintf(js, "}\n");
    return VP_OK;
}

/* Median milliseconds per repetition of a part, as a captured graph. */
static vp_status time_part(vp_trainer* t, part what, int reps, double* ms) {
    train_ctx c = {t, what, reps};
    return vp_bench_time_body(t->backend, train_body, &c, 1, reps, ms);
}

/* The configuration of one measurement: default model unless `small`, S collection steps. */
static vp_status bench_cfg(vp_config* c, int64_t n_envs, int64_t batch, int small, int64_t steps) {
    vp_config_defaults(c);
    c->env.n_envs = n_envs;
    c->train.collect_steps = steps;
    c->env.episode_bars = 1024;
    c->learn.batch = batch;
    c->replay.capacity = n_envs > 1048576 / 4 ? 4 * n_envs : 1048576;
    // at least learn.n_step warm-up steps of every env (the config's rule), four batches
    const int64_t per_env = c->learn.n_step * n_envs;
    c->replay.warmup = 4 * batch > per_env ? 4 * batch : per_env;
    c->features.window = 64;
    if (small) {
        c->model.hidden = 64, c->model.mamba_head_dim = 32, c->model.head_hidden = 64;
        c->model.iqn_taus = 16, c->model.iqn_target_taus = 16, c->model.iqn_cos = 32;
        c->replay.capacity = 65536;
    }
    vp_status s = vp_config_check(c);
    if (s != VP_OK)
        fprintf(stderr, "vulpes bench train: the configuration of %lld envs, S = %lld is invalid: %s\n",
                (long long)n_envs, (long long)steps, vp_last_error());
    return s;
}

/* Builds a trainer, warms it up and checks a few iterations; prints why on failure. */
static int trainer_ready(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    vp_runtime_counters c0, c1;
    vp_train_stats st;
    vp_status s = vp_trainer_init(t, b, cfg, d);
    if (s == VP_OK) s = vp_trainer_warmup(t);
    if (s == VP_OK) s = vp_trainer_iterate(t, 1);
    if (s == VP_OK) s = vp_backend_sync(b);
    vp_backend_counters(b, &c0);
    if (s == VP_OK) s = vp_trainer_iterate(t, 3);
    vp_backend_counters(b, &c1);
    if (s == VP_OK) s = vp_trainer_stats(t, &st);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench train: set-up of %lld envs failed: %s\n", (long long)cfg->env.n_envs,
                vp_last_error());
        return 0;
    }
    if (c1.copies != c0.copies || c1.allocs != c0.allocs || c1.syncs != c0.syncs || !isfinite(st.learner[VP_STAT_LOSS]) ||
        st.learner[VP_STAT_NAN_STEPS] != 0) {
        fprintf(stderr, "vulpes bench train: validation failed (copies +%lld, allocs +%lld, syncs +%lld, loss %g, NaN "
                "steps %g)\n", (long long)(c1.copies - c0.copies), (long long)(c1.allocs - c0.allocs),
                (long long)(c1.syncs - c0.syncs), (double)st.learner[VP_STAT_LOSS],
                (double)st.learner[VP_STAT_NAN_STEPS]);
        return 0;
    }
    return 1;
}

/* Collection figure for n envs and S steps per collection; returns 0 on failure. */
static int bench_collect(vp_backend* b, const vp_train_data* d, int64_t n, int64_t steps, int small, FILE* js) {
    vp_config cfg;
    vp_trainer t;
    double ms = 0;
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const char* be = cuda ? "cuda" : "cpu";
    if (bench_cfg(&cfg, n, 256, small, steps) != VP_OK || !trainer_ready(&t, b, &cfg, d)) return 0;
    // about 16 M env steps per launch at most, 50 collections at least
    const int64_t per = n * steps, cap = ((int64_t)1 << 24) / per;
    const int reps = cuda ? (int)(cap < 1 ? 1 : cap > 50 ? 50 : cap) : 2;
    vp_bench_floor fl = vp_bench_collect_floor(&t.collector, &t.learner.model.cfg);
    vp_status s = time_part(&t, PART_COLLECT, reps, &ms);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench train: collection timing failed: %s\n", vp_last_error());
        vp_trainer_free(&t);
        return 0;
    }
    const double eps = (double)per / (ms * 1e-3), frac = fl.floor_s * eps;
    char fr[16] = "-";
    if (cuda) snprintf(fr, sizeof fr, "%.3f", frac);
    printf("%-8s %-10s %8lld %4lld %-6s %14.4g %10.3f %9.3f %8.0f %7s\n", be, "collect", (long long)n, (long long)steps,
           fl.shared ? "shared" : fl.encode_once ? "once" : "step", eps, ms, fl.flops * 1e-6, fl.bytes, fr);
    fprintf(js, "{\"bench\":\"train\",\"what\":\"collect\",\"backend\":\"%s\",\"device\":\"%s\",\"n_envs\":%lld,"
            "\"collect_steps\":%lld,\"path\":\"%s\",\"span_rows\":%lld,\"hidden\":%lld,\"env_steps_per_s\":%.6g,"
            "\"ms_per_collect\":%.6g,\"flop_per_env_step\":%.6g,\"bytes_per_env_step\":%.6g,\"floor_s_per_env_step\":"
            "%.6g,\"floor_frac\":%.6g,\"shared_rows\":%d,\"enc_flop_per_window\":%.6g}\n", be, vp_backend_name(b),
            (long long)n, (long long)steps, fl.encode_once ? "encode_once" : "stepwise", (long long)fl.span_rows,
            (long long)cfg.model.hidden, eps, ms, fl.flops, fl.bytes, fl.floor_s, cuda ? frac : 0.0, fl.shared,
            fl.enc_flops);
    // where an encode-once collection's time goes (S >= 8)
    if (t.collector.encode_once && steps >= 8) s = bench_split(&t, steps, js);
    vp_trainer_free(&t);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench train: collection split failed: %s\n", vp_last_error());
        return 0;
    }
    return 1;
}

/* The graph body: the span encoding alone. */
static vp_status span_body(vp_backend* b, void* ctx) {
    (void)b;
    return vp_collector_encode_span((vp_collector*)ctx);
}

/* The span encoding of the S = 64 collector of n envs alone (vp_collector_encode_span), with
 * shared rows and with each window encoded alone; returns 0 on failure. */
static int bench_span(vp_backend* b, const vp_train_data* d, int64_t n, int small, FILE* js) {
    vp_config cfg;
    vp_trainer t;
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const char* be = cuda ? "cuda" : "cpu";
    if (bench_cfg(&cfg, n, 256, small, 64) != VP_OK || !trainer_ready(&t, b, &cfg, d)) return 0;
    vp_collector* c = &t.collector;
    const int shared = c->encode_once && c->span_shared;
    double ms[2] = {0, 0};
    vp_status s = VP_OK;
    for (int k = 0; k < 2 && shared && s == VP_OK; ++k) {
        c->span_shared = k == 0; /* shared rows, then each window alone */
        s = vp_bench_time_body(b, span_body, c, cuda, 1, &ms[k]);
    }
    const int64_t R = c->span_rows;
    vp_trainer_free(&t);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench train: span encoding timing failed: %s\n", vp_last_error());
        return 0;
    }
    if (!shared) return 1;
    printf("%-8s %-10s %8lld %4d %-6s %14.4g %10.3f (each window alone %.3f ms: %.2fx)\n", be, "span", (long long)n,
           64, "shared", (double)R / (ms[0] * 1e-3), ms[0], ms[1], ms[1] / ms[0]);
    fprintf(js, "{\"bench\":\"train\",\"what\":\"span\",\"backend\":\"%s\",\"device\":\"%s\",\"n_envs\":%lld,"
            "\"span_rows\":%lld,\"hidden\":%lld,\"ms_shared\":%.6g,\"ms_alone\":%.6g,\"windows_per_s\":%.6g}\n", be,
            vp_backend_name(b), (long long)n, (long long)R, (long long)cfg.model.hidden, ms[0], ms[1],
            (double)R / (ms[0] * 1e-3));
    return 1;
}

/* Iteration figure and its collection / learning split; returns 0 on failure. */
static int bench_iteration(vp_backend* b, const vp_train_data* d, int64_t n, int64_t batch, int small, int64_t steps,
                           int reps, FILE* js) {
    vp_config cfg;
    vp_trainer t;
    double all = 0, col = 0, lrn = 0;
    const char* be = vp_backend_get_kind(b) == VP_BACKEND_CUDA ? "cuda" : "cpu";
    if (bench_cfg(&cfg, n, batch, small, steps) != VP_OK || !trainer_ready(&t, b, &cfg, d)) return 0;
    const int once = t.collector.encode_once;
    vp_status s = time_part(&t, PART_ALL, reps, &all);
    if (s == VP_OK) s = time_part(&t, PART_COLLECT, reps, &col);
    if (s == VP_OK) s = time_part(&t, PART_LEARN, reps, &lrn);
    vp_trainer_free(&t);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench train: iteration timing failed: %s\n", vp_last_error());
        return 0;
    }
    const double ips = 1e3 / all, frac = col / (col + lrn), env_rate = (double)(n * steps) * ips;
    printf("%-8s %-10s %8lld %4lld %-6s %14.4g %10.3f collect %.3f ms + learn %.3f ms (%.0f %% collection), B %lld, "
           "%.4g env steps/s\n", be, "iteration", (long long)n, (long long)steps, once ? "once" : "step", ips, all, col,
           lrn, 100.0 * frac, (long long)batch, env_rate);
    fprintf(js, "{\"bench\":\"train\",\"what\":\"iteration\",\"backend\":\"%s\",\"device\":\"%s\",\"n_envs\":%lld,"
            "\"batch\":%lld,\"hidden\":%lld,\"collect_steps\":%lld,\"train_steps\":1,\"path\":\"%s\","
            "\"iterations_per_s\":%.6g,\"ms_per_iteration\":%.6g,\"collect_ms\":%.6g,\"learn_ms\":%.6g,"
            "\"collect_frac\":%.4f,\"env_steps_per_s\":%.6g}\n", be, vp_backend_name(b), (long long)n, (long long)batch,
            (long long)cfg.model.hidden, (long long)steps, once ? "encode_once" : "stepwise", ips, all, col, lrn, frac,
            env_rate);
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
        fprintf(stderr, "vulpes bench train: market set-up (%lld bars) failed: %s\n", (long long)n, vp_last_error());
        return 0;
    }
    return 1;
}

/* Prints a market's line and the table's header. */
static void market_header(vp_backend* b, const vp_train_data* d) {
    printf("train on %s: synthetic GBM market of %lld bars, training span [%lld, %lld)\n", vp_backend_name(b),
           (long long)d->bars.n, (long long)d->split.train.begin, (long long)d->split.train.end);
    printf("%-8s %-10s %8s %4s %-6s %14s %10s %9s %8s %7s\n", "backend", "what", "n_envs", "S", "path", "per second",
           "ms", "MFLOP/st", "B/st", "floor");
}

int vp_bench_train(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    // A synthetic market long enough for every episode window.
    vp_train_data d;
    if (!make_market(o->quick || !cuda ? 20000 : 200000, &d)) return 1;
    FILE* js = vp_bench_json_open(o);
    market_header(b, &d);
    int ok = 1;
    const int reps = o->iters > 0 ? o->iters : (cuda ? 50 : 3);
    const int64_t envs[3] = {4096, 65536, 262144}, steps[3] = {1, 8, 64}, qsteps[2] = {1, 64};
    if (o->envs || o->steps) {
        // one shape (--envs, --steps): its collections only, on the long market
        const int64_t n = o->envs ? o->envs : (cuda ? 4096 : 256);
        for (int j = 0; j < 3 && ok; ++j)
            if (!o->steps || j == 0) ok = bench_collect(b, &d, n, o->steps ? o->steps : steps[j], !cuda, js);
        vp_train_data_free(&d);
        vp_bench_json_close(js);
        return ok ? 0 : 1;
    }
    if (cuda) {
        const int ne = o->quick ? 1 : 3, ns = o->quick ? 2 : 3;
        for (int i = 0; i < ne && ok; ++i)
            for (int j = 0; j < ns && ok; ++j)
                ok = bench_collect(b, &d, envs[i], o->quick ? qsteps[j] : steps[j], 0, js);
        if (ok) ok = bench_span(b, &d, envs[0], 0, js);
        const int64_t ie = o->quick ? 1024 : 4096, ib = o->quick ? 1024 : 8192;
        if (ok) ok = bench_iteration(b, &d, ie, ib, 0, 1, reps, js);
        if (ok) ok = bench_iteration(b, &d, ie, ib, 0, 64, o->iters > 0 ? o->iters : 10, js);
    } else {
        const int64_t n = 256; /* 256 x 64 windows exceed the span: both paths */
        ok = bench_collect(b, &d, n, 1, 1, js);
        if (ok) ok = bench_collect(b, &d, n, 64, 1, js);
        if (ok) ok = bench_span(b, &d, n, 1, js);
        if (ok) ok = bench_iteration(b, &d, 32, 256, 1, 1, o->quick ? 3 : 10, js);
        if (ok) ok = bench_iteration(b, &d, 32, 256, 1, 16, o->quick ? 2 : 3, js);
    }
    vp_train_data_free(&d);
    // The span encoding's share falls with R / (E x S): S = 64 again on a market the length of
    // examples/data/eurusd_1h_2017.csv (6226 bars, a span of about 4300).
    if (ok && cuda && !o->quick && make_market(6226, &d)) {
        market_header(b, &d);
        for (int i = 0; i < 3 && ok; ++i) ok = bench_collect(b, &d, envs[i], 64, 0, js);
        vp_train_data_free(&d);
    }
    vp_bench_json_close(js);
    return ok ? 0 : 1;
}
