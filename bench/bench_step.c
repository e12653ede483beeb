/* `vulpes bench step`: milliseconds per learner step (tau draws, online and target
 * forwards, both losses, backward, clip, AdamW, Polyak, statistics) for the default
 * model at B = 8192 (--quick: B = 1024 on CUDA, 64 on the CPU; --batch B sets it), on a synthetic batch.
 * With --ablate KEY[,KEY=VALUE...] the default config's learner is timed first, then the same
 * with each switch on (the switches of `vulpes ablate`, every one checked by name before any
 * timing), and a last table sets each step time beside the default's.
 * The step is validated first (finite loss and gradient norm, no NaN flag), warmed up,
 * then timed as `iters` steps captured in one graph, launched between two syncs (host
 * clock), median of 5 launches. Each phase is then timed alone the same way, eagerly.
 * Achieved TFLOP/s are the GEMM FLOPs of the step (vp_model_flops) over the time.
 * Prints a table and JSON lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vulpes/ablate.h"
#include "vulpes/learner.h"
#include "vulpes/train.h"

#define FEATURE_ROWS 4096
/* The H200's measured matrix-product ceilings (docs/perf.md, "H200 ceilings"), TFLOP/s: the
 * step's FLOP floor is its GEMM FLOPs at these rates. */
#define CEIL_TF32_TFLOPS 355.0
#define CEIL_BF16_TFLOPS 760.0

typedef struct step_ctx {
    vp_learner* l;
    vp_batch* bt;
    vp_tensor* prio;
    int iters;
    int phase; /* -1: whole steps (tau draws included); else one phase */
} step_ctx;

/* `iters` steps (or one phase `iters` times). */
static vp_status step_body(vp_backend* b, void* ctx) {
    step_ctx* c = (step_ctx*)ctx;
    for (int i = 0; i < c->iters; ++i) {
        if (c->phase < 0) {
            VP_TRY(vp_learner_draw_taus(c->l, c->bt));
            VP_TRY(vp_learner_step(c->l, c->bt, c->prio));
        } else {
            VP_TRY(vp_learner_run_phase(c->l, (vp_learner_phase)c->phase, c->bt, c->prio));
        }
    }
    return VP_OK;
}

/* Median milliseconds per iteration of the body: as a graph when `graph`, else eagerly. */
static vp_status time_body(vp_backend* b, step_ctx* c, int graph, double* ms) {
    return vp_bench_time_body(b, step_body, c, graph, c->iters, ms);
}

/* Host buffers -> the batch: random features, bars, actions, rewards, weights. */
vp_status vp_bench_step_batch(vp_backend* b, vp_learner* l, vp_batch* bt, vp_buffer* fbuf) {
    const vp_learner_cfg* c = &l->cfg;
    const int64_t B = c->batch, F = c->model.n_features, P = c->model.n_portfolio, nb = c->model.n_branches;
    const vp_mem mem = vp_backend_native_mem(b);
    const size_t fl = (size_t)(FEATURE_ROWS * F + 2 * B * P + 3 * B), in = (size_t)(2 * B + B * nb);
    float* hf = (float*)malloc(fl * sizeof(float));
    int32_t* hi = (int32_t*)malloc(in * sizeof(int32_t));
    vp_status s = (hf && hi) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "bench step: out of host memory");
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, sizeof(float) * (size_t)(FEATURE_ROWS * F), fbuf);
    if (s == VP_OK) {
        // Floats: features N(0, 1), portfolios U(-1, 1), rewards, discounts (every 16th terminal), weights.
        float *feat = hf, *port = feat + FEATURE_ROWS * F, *nport = port + B * P, *rew = nport + B * P;
        float *disc = rew + B, *w = disc + B;
        for (int64_t i = 0; i < FEATURE_ROWS * F; ++i) feat[i] = vp_rng_normal(77, 1, (uint64_t)i);
        for (int64_t i = 0; i < 2 * B * P; ++i) port[i] = 2.0f * vp_rng_uniform(77, 2, (uint64_t)i) - 1.0f;
        for (int64_t i = 0; i < B; ++i) {
            rew[i] = 4.0f * vp_rng_uniform(77, 3, (uint64_t)i) - 2.0f;
            disc[i] = i % 16 == 5 ? 0.0f : 0.970299f;
            w[i] = 0.4f + 0.6f * vp_rng_uniform(77, 4, (uint64_t)i);
        }
        // Integers: bars past the first window, bars 3 later, one choice per branch.
        int32_t *bar = hi, *nbar = bar + B, *act = nbar + B;
        for (int64_t i = 0; i < B; ++i) {
            bar[i] = (int32_t)(vp_rng_uniform(77, 5, (uint64_t)i) * (FEATURE_ROWS - 4));
            nbar[i] = bar[i] + 3;
            for (int64_t br = 0; br < nb; ++br)
                act[i * nb + br] =
                    (int32_t)(vp_rng_uniform(77, 6, (uint64_t)(i * nb + br)) * c->model.branch_sizes[br]);
        }
        bt->features = vp_tensor_2d(fbuf->dev, VP_F32, mem, FEATURE_ROWS, F);
        s = vp_upload(b, &bt->features, feat, sizeof(float) * (size_t)(FEATURE_ROWS * F));
        if (s == VP_OK) s = vp_upload(b, &bt->portfolio, port, sizeof(float) * (size_t)(B * P));
        if (s == VP_OK) s = vp_upload(b, &bt->next_portfolio, nport, sizeof(float) * (size_t)(B * P));
        if (s == VP_OK) s = vp_upload(b, &bt->reward, rew, sizeof(float) * (size_t)B);
        if (s == VP_OK) s = vp_upload(b, &bt->discount, disc, sizeof(float) * (size_t)B);
        if (s == VP_OK) s = vp_upload(b, &bt->is_weight, w, sizeof(float) * (size_t)B);
        if (s == VP_OK) s = vp_upload(b, &bt->bar_idx, bar, sizeof(int32_t) * (size_t)B);
        if (s == VP_OK) s = vp_upload(b, &bt->next_bar_idx, nbar, sizeof(int32_t) * (size_t)B);
        if (s == VP_OK) s = vp_upload(b, &bt->actions, act, sizeof(int32_t) * (size_t)(B * nb));
    }
    free(hf);
    free(hi);
    return s;
}

/* Runs one step and checks the statistics the host reads from mapped memory. */
static vp_status validate(vp_backend* b, step_ctx* c) {
    c->phase = -1;
    int iters = c->iters;
    c->iters = 1;
    vp_status s = step_body(b, c);
    c->iters = iters;
    VP_TRY(s);
    VP_TRY(vp_backend_sync(b));
    const float* st = c->l->stats_host;
    VP_REQUIRE(isfinite(st[VP_STAT_LOSS]) && st[VP_STAT_LOSS] > 0.0f && isfinite(st[VP_STAT_GRAD_NORM]) &&
                   st[VP_STAT_GRAD_NORM] > 0.0f && st[VP_STAT_NAN] == 0.0f,
               VP_ERR_NUMERIC, "bench step: validation failed: loss %g, grad norm %g, NaN flag %g",
               (double)st[VP_STAT_LOSS], (double)st[VP_STAT_GRAD_NORM], (double)st[VP_STAT_NAN]);
    return VP_OK;
}

/* What one timed learner reports to the comparison table. */
typedef struct step_result {
    double step_ms;     /* the whole step (graph, or eager when capture failed) */
    double gflop;       /* GEMM GFLOP per step */
    int64_t parameters; /* the network's parameter count */
} step_result;

/* Validates, times and prints one learner config (its table and JSON lines; `variant` names it
 * in both when not NULL); *res receives its step time. Returns an exit code. */
static int bench_one(vp_backend* b, const vp_bench_opts* o, const vp_learner_cfg* lc, const char* variant,
                     step_result* res) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    vp_learner_cfg cfg = *lc;
    const int iters = o->iters > 0 ? o->iters : (cuda ? 10 : 1);
    const vp_model_cfg* mc = &cfg.model;
    // GEMM FLOPs: online forward + backward at s_t, online and target forwards at s_{t+n}.
    const double f_online = vp_model_flops(mc, cfg.batch, cfg.n_taus, 0);
    const double f_bwd = vp_model_flops(mc, cfg.batch, cfg.n_taus, 1) - f_online;
    const double f_fwd =
        f_online + vp_model_flops(mc, cfg.batch, 0, 0) + vp_model_flops(mc, cfg.batch, cfg.n_target_taus, 0);
    const double phase_flops[VP_PHASE_COUNT] = {f_fwd, 0.0, f_bwd, 0.0};

    vp_learner l;
    vp_batch bt;
    vp_buffer fbuf, pbuf;
    memset(&fbuf, 0, sizeof fbuf);
    memset(&pbuf, 0, sizeof pbuf);
    vp_status s = vp_learner_init(&l, b, &cfg);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench step: %s\n", vp_last_error());
        return 1;
    }
    s = vp_learner_batch_init(&l, &bt);
    if (s == VP_OK) s = vp_bench_step_batch(b, &l, &bt, &fbuf);
    if (s == VP_OK) s = vp_buffer_alloc(b, vp_backend_native_mem(b), sizeof(float) * (size_t)cfg.batch, &pbuf);
    vp_tensor prio = vp_tensor_1d(pbuf.dev, VP_F32, vp_backend_native_mem(b), cfg.batch);
    step_ctx c = {&l, &bt, &prio, iters, -1};
    // Validate, then time whole steps as a graph (eagerly if capture fails), then phases.
    if (s == VP_OK) s = validate(b, &c);
    double step_ms = 0.0, phase_ms[VP_PHASE_COUNT] = {0};
    int graph = 1;
    if (s == VP_OK) {
        s = time_body(b, &c, 1, &step_ms);
        if (s != VP_OK) {
            fprintf(stderr, "vulpes bench step: graph capture failed (%s); timing eager steps\n", vp_last_error());
            vp_clear_error();
            graph = 0;
            s = time_body(b, &c, 0, &step_ms);
        }
    }
    for (int p = 0; p < VP_PHASE_COUNT && s == VP_OK; ++p) {
        c.phase = p;
        s = time_body(b, &c, 0, &phase_ms[p]);
    }
    if (s == VP_OK && !(isfinite(l.stats_host[VP_STAT_LOSS]) && l.stats_host[VP_STAT_NAN_STEPS] == 0.0f))
        s = vp_set_error(VP_ERR_NUMERIC, VP_WHERE, "bench step: the loss turned non-finite while timing");
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench step: %s\n", vp_last_error());
        vp_buffer_free(b, &fbuf);
        vp_buffer_free(b, &pbuf);
        vp_learner_free(&l);
        return 1;
    }
    // Table, then JSON lines.
    const double total_flops = f_fwd + f_bwd;
    double sum = 0.0;
    for (int p = 0; p < VP_PHASE_COUNT; ++p) sum += phase_ms[p];
    printf("vulpes bench step on %s: %s%s (H %d, K %d, Z %d, %d+%d taus), B = %lld, %.1f GFLOP per step\n",
           vp_backend_name(b), variant ? "variant " : "default model", variant ? variant : "", mc->hidden, mc->window,
           mc->n_atoms, cfg.n_taus, cfg.n_target_taus, (long long)cfg.batch, total_flops * 1e-9);
    printf("%-22s %10s %8s %10s %9s\n", "phase", "ms", "share", "GFLOP", "TFLOP/s");
    for (int p = 0; p < VP_PHASE_COUNT; ++p)
        printf("%-22s %10.3f %7.1f%% %10.1f %9.2f\n", vp_learner_phase_name((vp_learner_phase)p), phase_ms[p],
               100.0 * phase_ms[p] / sum, phase_flops[p] * 1e-9, phase_flops[p] / (phase_ms[p] * 1e-3) / 1e12);
    printf("%-22s %10.3f %8s %10.1f %9.2f\n", "sum of phases (eager)", sum, "", total_flops * 1e-9,
           total_flops / (sum * 1e-3) / 1e12);
    printf("%-22s %10.3f %8s %10.1f %9.2f\n", graph ? "step (graph)" : "step (eager)", step_ms, "", total_flops * 1e-9,
           total_flops / (step_ms * 1e-3) / 1e12);
    const double floor_tf32 = total_flops / (CEIL_TF32_TFLOPS * 1e12) * 1e3;
    const double floor_bf16 = total_flops / (CEIL_BF16_TFLOPS * 1e12) * 1e3;
    if (cuda)
        printf("FLOP floor: %.3f ms at %.0f TFLOP/s (TF32), %.3f ms at %.0f (BF16), the H200's measured GEMM ceilings; "
               "this step reaches %.1f %% of the TF32 floor\n",
               floor_tf32, CEIL_TF32_TFLOPS, floor_bf16, CEIL_BF16_TFLOPS, 100.0 * floor_tf32 / step_ms);
    printf("last step: loss %.4f, grad norm %.4f, mean Q %.4f\n", (double)l.stats_host[VP_STAT_LOSS],
           (double)l.stats_host[VP_STAT_GRAD_NORM], (double)l.stats_host[VP_STAT_Q_MEAN]);
    FILE* js = vp_bench_json_open(o);
    const char* dev = vp_backend_name(b);
    char vj[VP_ABLATE_NAME_MAX + 16] = "";
    if (variant) snprintf(vj, sizeof vj, "\"variant\":\"%s\",", variant);
    for (int p = 0; p < VP_PHASE_COUNT; ++p)
        fprintf(js,
                "{\"bench\":\"step\",%s\"backend\":\"%s\",\"device\":\"%s\",\"batch\":%lld,\"phase\":\"%s\","
                "\"ms\":%.5f,\"gflop\":%.3f,\"tflops\":%.3f,\"iters\":%d}\n",
                vj, cuda ? "cuda" : "cpu", dev, (long long)cfg.batch, vp_learner_phase_name((vp_learner_phase)p),
                phase_ms[p], phase_flops[p] * 1e-9, phase_flops[p] / (phase_ms[p] * 1e-3) / 1e12, iters);
    fprintf(js,
            "{\"bench\":\"step\",%s\"backend\":\"%s\",\"device\":\"%s\",\"batch\":%lld,\"phase\":\"step\",\"graph\":%d,"
            "\"ms\":%.5f,\"ms_phase_sum\":%.5f,\"gflop\":%.3f,\"tflops\":%.3f,\"iters\":%d,\"hidden\":%d,"
            "\"n_taus\":%d,\"n_atoms\":%d,\"floor_ms_tf32\":%.5f,\"floor_ms_bf16\":%.5f}\n",
            vj, cuda ? "cuda" : "cpu", dev, (long long)cfg.batch, graph, step_ms, sum, total_flops * 1e-9,
            total_flops / (step_ms * 1e-3) / 1e12, iters, mc->hidden, cfg.n_taus, mc->n_atoms, floor_tf32, floor_bf16);
    vp_bench_json_close(js);
    res->step_ms = step_ms, res->gflop = total_flops * 1e-9, res->parameters = l.model.n_weights;
    vp_buffer_free(b, &fbuf);
    vp_buffer_free(b, &pbuf);
    vp_learner_free(&l);
    return 0;
}

/* The batch of this bench: --batch, else --quick's, else the config's. */
static void set_batch(vp_learner_cfg* c, const vp_bench_opts* o, int cuda) {
    if (o->quick) c->batch = cuda ? 1024 : 64;
    if (o->batch > 0) c->batch = o->batch;
}

/* The learner of config c (the default config with a switch on), with the default learner's
 * feature count. */
static vp_status learner_of(const vp_config* c, vp_learner_cfg* out) {
    vp_train_parts parts;
    VP_TRY(vp_config_check(c));
    VP_TRY(vp_train_parts_make(c, vp_learner_cfg_default().model.n_features, &parts));
    VP_TRY(vp_model_cfg_check(&parts.learner.model));
    *out = parts.learner;
    return VP_OK;
}

/* --ablate: the default config's learner, then each switch on; every switch is read and its
 * learner made before anything is timed, so a bad one is refused at once, by name. */
static int bench_ablate(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    char list[4096];
    snprintf(list, sizeof list, "%s", o->ablate);
    vp_ablate_variant v[VP_ABLATE_MAX_SWITCHES + 1];
    vp_learner_cfg lc[VP_ABLATE_MAX_SWITCHES + 1];
    vp_config base;
    vp_config_defaults(&base);
    int n = 1;
    vp_status s = learner_of(&base, &lc[0]);
    for (char *tok = list, *comma; s == VP_OK && tok; tok = comma ? comma + 1 : NULL) {
        comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (n > VP_ABLATE_MAX_SWITCHES) {
            s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "--ablate: more than %d switches", VP_ABLATE_MAX_SWITCHES);
            break;
        }
        s = vp_ablate_parse_switch(&base, tok, &v[n]);
        vp_config c = base;
        if (s == VP_OK) s = vp_config_set(&c, v[n].key->name, v[n].value, v[n].name);
        if (s == VP_OK) s = learner_of(&c, &lc[n]);
        if (s != VP_OK) s = vp_error_context(s, "--ablate");
        ++n;
    }
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench step: %s\n", vp_api_last_error());
        return 2;
    }
    step_result res[VP_ABLATE_MAX_SWITCHES + 1];
    for (int i = 0; i < n; ++i) {
        set_batch(&lc[i], o, cuda);
        if (i > 0) printf("\n");
        const int rc = bench_one(b, o, &lc[i], i ? v[i].name : NULL, &res[i]);
        if (rc != 0) return rc;
    }
    // the step times side by side
    int w = 7;
    for (int i = 1; i < n; ++i)
        if ((int)strlen(v[i].name) > w) w = (int)strlen(v[i].name);
    printf("\nlearner step with each switch on, beside the default (B = %lld, %s):\n%-*s %10s %10s %10s %12s\n",
           (long long)lc[0].batch, vp_backend_name(b), w, "variant", "step ms", "vs default", "GFLOP", "parameters");
    for (int i = 0; i < n; ++i) {
        char rel[32] = "-";
        if (i > 0) snprintf(rel, sizeof rel, "%+.1f %%", 100.0 * (res[i].step_ms / res[0].step_ms - 1.0));
        printf("%-*s %10.3f %10s %10.1f %12lld\n", w, i ? v[i].name : "default", res[i].step_ms, rel, res[i].gflop,
               (long long)res[i].parameters);
    }
    return 0;
}

int vp_bench_step(vp_backend* b, const vp_bench_opts* o) {
    if (o->ablate) return bench_ablate(b, o);
    vp_learner_cfg cfg = vp_learner_cfg_default();
    set_batch(&cfg, o, vp_backend_get_kind(b) == VP_BACKEND_CUDA);
    step_result res;
    return bench_one(b, o, &cfg, NULL, &res);
}
