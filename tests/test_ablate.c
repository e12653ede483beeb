/* vulpes ablate on the CPU: a tiny config on a synthetic market, the base and the variant
 * model.encoder=none, 2 seeds each, 2 runs at once. The table's every figure is checked
 * against the runs' own files (summary.json's test-span Sharpe and moments, metrics.jsonl's
 * "run" and "timing" events): the mean and standard error over the seeds by hand, the
 * deflated Sharpe over the 4 runs from the metrics' DSR functions, the parameter counts; the
 * CSV, JSON and page agree; each run trains with its own seed and variant. An ablation stopped
 * after one run resumes without training that run again, to the same figures. Refused switches
 * name the switch and leave no folder behind. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <sys/stat.h>

#include "test_data_util.h"
#include "test_job_util.h"
#include "vp_test.h"
#include "vulpes/ablate.h"

/* What a run's own files say. */
typedef struct run_files {
    double sharpe, ppy, skew, kurt, n; /* summary.json test.strategy */
    double params;                     /* metrics.jsonl's "run" event */
    double wall, steps;                /* the sums over its "timing" events */
} run_files;

static void read_run(const char* dir, run_files* f) {
    cJSON* s = vpt_json_file(dir, "summary.json");
    CHECK(s && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "finished")), "%s: no finished summary.json", dir);
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "test"), "strategy");
    f->sharpe = vpt_json_num(st, "sharpe_ratio"), f->ppy = vpt_json_num(st, "periods_per_year");
    f->skew = vpt_json_num(st, "skewness_ratio"), f->kurt = vpt_json_num(st, "kurtosis_ratio"), f->n = vpt_json_num(st, "n_valid_returns");
    cJSON_Delete(s);
    char* m = vpt_read_file(dir, "metrics.jsonl", NULL);
    CHECK(m != NULL, "%s: no metrics.jsonl", dir);
    f->params = NAN, f->wall = 0, f->steps = 0;
    double prev = 0;
    for (char *line = m, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        cJSON* e = cJSON_Parse(line);
        const char* ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "event"));
        if (ev && strcmp(ev, "run") == 0) f->params = vpt_json_num(e, "parameters");
        if (ev && strcmp(ev, "timing") == 0) {
            const double w = vpt_json_num(e, "wall_s"), rate = vpt_json_num(e, "learner_steps_per_s");
            if (isfinite(rate) && w > prev) f->wall += w - prev, f->steps += rate * (w - prev);
            prev = w;
        }
        cJSON_Delete(e);
    }
    free(m);
}

/* The run folders in table order: base seeds 11, 12, then the variant's. */
static void run_dir(const char* root, int k, char* out, size_t n) {
    static const char* slugs[2] = {"base", "model.encoder=none"};
    snprintf(out, n, "%s/runs/%s/seed_%d", root, slugs[k / 2], 11 + k % 2);
}

/* Checks r's table against the run folders under root. */
static void check_table(const char* root, const vp_ablate_result* r) {
    CHECK(r->n_variants == 2 && r->n_runs == 4 && r->n_done == 4 && !r->interrupted && r->n_trials == 4,
          "%d variants, %lld runs, %lld done", r->n_variants, (long long)r->n_runs, (long long)r->n_done);
    CHECK(strcmp(r->variants[0].name, "base") == 0 && strcmp(r->variants[1].name, "model.encoder=none") == 0,
          "variants '%s', '%s'", r->variants[0].name, r->variants[1].name);
    run_files f[4];
    char d[600];
    for (int k = 0; k < 4; ++k) {
        run_dir(root, k, d, sizeof d);
        read_run(d, &f[k]);
        CHECK(strcmp(r->runs[k].dir, d) == 0 && r->runs[k].seed == 11 + k % 2 && r->runs[k].variant == k / 2,
              "run %d: %s seed %lld", k, r->runs[k].dir, (long long)r->runs[k].seed);
        CHECK(isfinite(f[k].sharpe), "run %d: the test Sharpe is undefined, the test learns nothing from it", k);
        CHECK(r->runs[k].sharpe == f[k].sharpe, "run %d: Sharpe %.17g, summary.json %.17g", k, r->runs[k].sharpe,
              f[k].sharpe);
        CHECK(r->runs[k].parameters == (int64_t)f[k].params, "run %d: %lld parameters, metrics.jsonl %g", k,
              (long long)r->runs[k].parameters, f[k].params);
        CHECK(f[k].steps > 0 && r->runs[k].step_ms > 0, "run %d: no learner steps timed", k);
        CHECK_NEAR(r->runs[k].step_ms, 1e3 * f[k].wall / f[k].steps, 0, 1e-12);
        // each run trains with its own seed and its variant's switch
        vp_config c;
        vp_config_defaults(&c);
        char cy[700];
        snprintf(cy, sizeof cy, "%s/config.yaml", d);
        CHECK_OK(vp_config_load_file(&c, cy));
        CHECK(c.run.seed == 11 + k % 2 && c.model.encoder == (k < 2 ? VP_ENCODER_MAMBA2 : VP_ENCODER_NONE),
              "run %d: seed %lld, encoder %d", k, (long long)c.run.seed, (int)c.model.encoder);
    }
    // the Mamba2 mixer's weights are gone without it
    CHECK(f[0].params == f[1].params && f[2].params == f[3].params && f[2].params < f[0].params,
          "parameters %g %g %g %g", f[0].params, f[1].params, f[2].params, f[3].params);
    // per variant: mean and standard error over its 2 seeds, by hand (SE of 2 = |a - b| / 2)
    for (int v = 0; v < 2; ++v) {
        const double a = f[2 * v].sharpe, b = f[2 * v + 1].sharpe;
        const vp_ablate_row* w = &r->rows[v];
        CHECK(w->seeds == 2 && w->defined == 2, "variant %d: %lld seeds", v, (long long)w->seeds);
        CHECK_NEAR(w->sharpe_mean, (a + b) / 2, 1e-12, 1e-12);
        CHECK_NEAR(w->sharpe_se, fabs(a - b) / 2, 1e-12, 1e-12);
        CHECK(w->parameters == (int64_t)f[2 * v].params, "variant %d: %lld parameters", v, (long long)w->parameters);
        CHECK_NEAR(w->step_ms, (r->runs[2 * v].step_ms + r->runs[2 * v + 1].step_ms) / 2, 0, 1e-12);
        CHECK(w->best_seed == (a >= b ? 11 : 12), "variant %d: best seed %lld", v, (long long)w->best_seed);
    }
    // the deflation: the 4 runs are the trials, their Sharpes' sample variance, SR0, PSR(SR0) per run
    double mean = 0, var = 0;
    for (int k = 0; k < 4; ++k) mean += f[k].sharpe / 4;
    for (int k = 0; k < 4; ++k) var += (f[k].sharpe - mean) * (f[k].sharpe - mean) / 3;
    CHECK_NEAR(r->trials_sharpe_variance, var, 1e-12, 1e-9);
    const double sr0 = vp_expected_max_sharpe(var / f[0].ppy, 4);
    CHECK_NEAR(r->expected_max_sharpe, sr0 * sqrt(f[0].ppy), 1e-12, 1e-9);
    for (int k = 0; k < 4; ++k) {
        const double dsr = vp_psr(f[k].sharpe / sqrt(f[k].ppy), sr0, f[k].skew, f[k].kurt, (int64_t)f[k].n);
        CHECK_NEAR(r->runs[k].deflated_sharpe, dsr, 1e-12, 1e-9);
        CHECK(dsr >= 0 && dsr <= 1, "run %d: DSR %g", k, dsr);
    }
    for (int v = 0; v < 2; ++v) {
        const int best = f[2 * v].sharpe >= f[2 * v + 1].sharpe ? 2 * v : 2 * v + 1;
        CHECK(r->rows[v].deflated_sharpe == r->runs[best].deflated_sharpe, "variant %d: DSR of another seed", v);
    }
}

/* ablate.json, ablate.csv and report.html hold the table's figures. */
static void check_files(const char* root, const vp_ablate_result* r) {
    cJSON* j = vpt_json_file(root, "ablate.json");
    const cJSON* vars = cJSON_GetObjectItemCaseSensitive(j, "variants");
    CHECK(cJSON_GetArraySize(vars) == 2 && vpt_json_num(j, "runs_finished") == 4, "ablate.json: %d variants",
          cJSON_GetArraySize(vars));
    for (int v = 0; v < 2 && v < cJSON_GetArraySize(vars); ++v) {
        const cJSON* o = cJSON_GetArrayItem(vars, v);
        CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "variant")), r->variants[v].name) == 0,
              "ablate.json: variant %d's name", v);
        CHECK(vpt_json_num(o, "sharpe_mean_ratio") == r->rows[v].sharpe_mean && vpt_json_num(o, "sharpe_se_ratio") == r->rows[v].sharpe_se &&
                  vpt_json_num(o, "deflated_sharpe_frac") == r->rows[v].deflated_sharpe &&
                  vpt_json_num(o, "parameters") == (double)r->rows[v].parameters && vpt_json_num(o, "seeds") == 2,
              "ablate.json: variant %d's figures", v);
    }
    CHECK(vpt_json_num(cJSON_GetObjectItemCaseSensitive(j, "deflation"), "trials") == 4, "ablate.json: trials");
    cJSON_Delete(j);
    char* csv = vpt_read_file(root, "ablate.csv", NULL);
    char want[400];
    snprintf(want, sizeof want, "\nmodel.encoder=none,model.encoder,none,2,2,%.17g,%.17g,", r->rows[1].sharpe_mean,
             r->rows[1].sharpe_se);
    CHECK(csv && strncmp(csv, "variant,key,value,seeds,defined,sharpe_mean,", 44) == 0 && strstr(csv, want),
          "ablate.csv lacks '%s':\n%s", want, csv ? csv : "(none)");
    free(csv);
    char* html = vpt_read_file(root, "report.html", NULL);
    CHECK(html && strstr(html, "<a href=\"runs/base/seed_11/report.html\">") &&
              strstr(html, "<a href=\"runs/model.encoder=none/seed_12/report.html\">") &&
              strstr(html, "Content-Security-Policy") && !strstr(html, "<script"),
          "report.html: the run links or the policy are missing");
    free(html);
    struct stat st;
    char p[600];
    run_dir(root, 3, p, sizeof p);
    strncat(p, "/report.html", sizeof p - strlen(p) - 1);
    CHECK(stat(p, &st) == 0, "%s: the run's own report is missing", p);
}

static void test_ablate_table(void) {
    char root[256], dir[300], dir2[300];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    vpt_job_tiny_config(&cfg);
    const char* sw[1] = {"model.encoder=none"};
    snprintf(dir, sizeof dir, "%s/ab", root);
    vp_ablate_opts o = {dir, VP_RUN_CREATE, sw, 1, 2, 2, NULL, NULL, 0, 1};
    vp_ablate_result r;
    CHECK_OK(vp_ablate_run(&cfg, be, &o, &r));
    check_table(dir, &r);
    check_files(dir, &r);
    // the console table: a line per variant
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    CHECK_OK(vp_ablate_print(&r, f));
    fclose(f);
    CHECK(text && strstr(text, "\nbase  ") && strstr(text, "\nmodel.encoder=none  ") &&
              strstr(text, "deflated Sharpe over 4 runs"),
          "the table:\n%s", text ? text : "");
    free(text);

    // stopped after one run (one at a time), then resumed: that run is not trained again, the rest
    // are, and the figures are the same
    snprintf(dir2, sizeof dir2, "%s/ab2", root);
    vp_ablate_opts o2 = {dir2, VP_RUN_CREATE, sw, 1, 2, 1, NULL, NULL, 1, 1};
    vp_ablate_result r2;
    CHECK_OK(vp_ablate_run(&cfg, be, &o2, &r2));
    CHECK(r2.n_done == 1 && r2.interrupted && r2.runs[0].finished && !r2.runs[1].finished,
          "stopped: %lld done, interrupted %d", (long long)r2.n_done, r2.interrupted);
    char first[600];
    run_dir(dir2, 0, first, sizeof first);
    char* before = vpt_read_file(first, "metrics.jsonl", NULL);
    vp_ablate_result_free(&r2);
    vp_ablate_opts o3 = {dir2, VP_RUN_RESUME, NULL, 0, 0, 2, NULL, NULL, 0, 1};
    CHECK_OK(vp_ablate_run(&cfg, be, &o3, &r2));
    char* after = vpt_read_file(first, "metrics.jsonl", NULL);
    CHECK(before && after && strcmp(before, after) == 0, "the finished run was trained again on the resume");
    free(before);
    free(after);
    check_table(dir2, &r2);
    for (int v = 0; v < 2; ++v)
        CHECK(r2.rows[v].sharpe_mean == r.rows[v].sharpe_mean && r2.rows[v].sharpe_se == r.rows[v].sharpe_se &&
                  r2.rows[v].deflated_sharpe == r.rows[v].deflated_sharpe,
              "variant %d: the resumed ablation's figures differ", v);
    char* events = vpt_read_file(dir2, "metrics.jsonl", NULL);
    int n_ev = 0;
    for (const char* q = events; q && (q = strstr(q, "\"event\":\"ablate_run\"")) != NULL; ++q) ++n_ev;
    CHECK(n_ev == 4, "%d ablate_run events over the two calls, expected 4", n_ev);
    free(events);
    // a resume of another base config is refused, naming the key
    vp_ablate_result_free(&r2);
    vp_config other = cfg;
    other.learn.lr = 0.5;
    CHECK_STATUS(vp_ablate_run(&other, be, &o3, &r2), VP_ERR_INVALID_ARG, "learn.lr differs from its config.yaml");
    CHECK(r2.n_variants == 0 && r2.variants == NULL && r2.runs == NULL, "a refused ablation returns no result");
    vp_ablate_result_free(&r2);
    vp_ablate_result_free(&r);
    vp_backend_free(be);
}

/* One refused switch list: the status, the message and no folder. */
static void refused(const vp_config* cfg, vp_backend* be, const char* root, const char* const* sw, int n,
                    int64_t seeds, const char* needle) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/refused", root);
    vp_ablate_opts o = {dir, VP_RUN_CREATE, sw, n, seeds, 1, NULL, NULL, 0, 1};
    vp_ablate_result r;
    CHECK_STATUS(vp_ablate_run(cfg, be, &o, &r), VP_ERR_INVALID_ARG, needle);
    vp_ablate_result_free(&r);
    struct stat st;
    CHECK(stat(dir, &st) != 0, "'%s' (%s): the refused ablation left %s behind", sw[0], needle, dir);
}

static void test_ablate_refused(void) {
    char root[256];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    vpt_job_tiny_config(&cfg);
    const char* unknown[2] = {"model.encoder=none", "model.encodr"};
    refused(&cfg, be, root, unknown, 2, 2, "switch 'model.encodr': unknown key 'model.encodr'; did you mean 'model.encoder'?");
    const char* seed[1] = {"run.seed=3"};
    refused(&cfg, be, root, seed, 1, 2, "switch 'run.seed=3': run.seed is not a switch");
    const char* iters[1] = {"train.iterations=9"};
    refused(&cfg, be, root, iters, 1, 2, "train.iterations is not a switch");
    const char* costs[1] = {"instrument.commission=0"};
    refused(&cfg, be, root, costs, 1, 2, "instrument.commission is not a switch");
    const char* bare[1] = {"model.hidden"};
    refused(&cfg, be, root, bare, 1, 2, "switch 'model.hidden': model.hidden is not a bool key, so the switch needs "
            "its value: model.hidden=VALUE");
    const char* same[1] = {"model.encoder=mamba2"};
    refused(&cfg, be, root, same, 1, 2, "switch 'model.encoder=mamba2': the base config already has model.encoder = mamba2");
    const char* bad[1] = {"model.hidden=wide"};
    refused(&cfg, be, root, bad, 1, 2, "switch 'model.hidden=wide'");
    const char* twice[2] = {"learn.n_step=1", "learn.n_step=1"};
    refused(&cfg, be, root, twice, 2, 2, "switch 'learn.n_step=1' is given twice");
    const char* ok[1] = {"learn.n_step=1"};
    refused(&cfg, be, root, ok, 1, 0, "at least 1 seed per variant, got 0");
    refused(&cfg, be, root, ok, 1, INT64_C(1) << 40, "at most 10000 seeds per variant, got 1099511627776");
    // a resumed plan with a seed count no ablation has is refused before anything is allocated
    char pdir[300], ppath[340];
    snprintf(pdir, sizeof pdir, "%s/badplan", root);
    CHECK(mkdir(pdir, 0777) == 0, "mkdir %s", pdir);
    snprintf(ppath, sizeof ppath, "%s/ablate_plan.json", pdir);
    FILE* pf = fopen(ppath, "w");
    CHECK(pf != NULL, "cannot write %s", ppath);
    if (pf) {
        fputs("{\"switches\":[\"learn.n_step=1\"],\"seeds\":1e30,\"base_seed\":1}\n", pf);
        fclose(pf);
    }
    vp_ablate_opts po = {pdir, VP_RUN_RESUME, NULL, 0, 0, 1, NULL, NULL, 0, 1};
    vp_ablate_result pr;
    CHECK_STATUS(vp_ablate_run(&cfg, be, &po, &pr), VP_ERR_PARSE, "its ablate_plan.json is not one vulpes wrote");
    vp_ablate_result_free(&pr);
    // a variant the network cannot take: a head width that does not divide the trunk
    const char* head[1] = {"model.mamba_head_dim=7"};
    refused(&cfg, be, root, head, 1, 2, "variant 'model.mamba_head_dim=7'");
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_ablate_refused);
    RUN_TEST(test_ablate_table);
    return vpt_finish();
}
