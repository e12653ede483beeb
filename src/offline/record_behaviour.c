/* Behaviour policies of a recording (vulpes/record.h): parsing their specs, the moving-average
 * crossover's rule and the log-probability of an action under epsilon. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/record.h"

/* Longest option value of a spec. */
#define VALUE_MAX 64

/* Reads a count in [lo, hi] from option text v of `key`. */
static vp_status read_count(const char* spec, const char* key, const char* v, int lo, int hi, int* out) {
    char* end = NULL;
    errno = 0;
    const long x = (v[0] >= '0' && v[0] <= '9') ? strtol(v, &end, 10) : -1;
    VP_REQUIRE(end != NULL && *end == '\0' && errno == 0 && x >= lo && x <= hi, VP_ERR_INVALID_ARG,
               "behaviour '%s': %s=%s is not a whole number in %d..%d", spec, key, v, lo, hi);
    *out = (int)x;
    return VP_OK;
}

/* Reads epsilon in [0, 1] from option text v. */
static vp_status read_epsilon(const char* spec, const char* v, double* out) {
    char* end = NULL;
    const double x = (v[0] >= '0' && v[0] <= '9') || v[0] == '.' ? strtod(v, &end) : -1.0;
    VP_REQUIRE(end != NULL && *end == '\0' && x >= 0.0 && x <= 1.0, VP_ERR_INVALID_ARG,
               "behaviour '%s': epsilon=%s is not a probability in 0..1", spec, v);
    *out = x;
    return VP_OK;
}

/* Applies one "key=value" option of the spec to *b (the ma_cross keys only for ma_cross). */
static vp_status apply_option(const char* spec, const char* opt, size_t n, vp_behaviour* b, int* given) {
    char key[VALUE_MAX], val[VALUE_MAX];
    const char* eq = memchr(opt, '=', n);
    VP_REQUIRE(eq != NULL && eq > opt && (size_t)(eq - opt) < sizeof key && n - (size_t)(eq - opt) - 1 < sizeof val &&
                   (size_t)(eq - opt) + 1 < n,
               VP_ERR_INVALID_ARG, "behaviour '%s': option '%.*s' is not key=value", spec, (int)n, opt);
    memcpy(key, opt, (size_t)(eq - opt));
    key[eq - opt] = '\0';
    memcpy(val, eq + 1, n - (size_t)(eq - opt) - 1);
    val[n - (size_t)(eq - opt) - 1] = '\0';
    const int ma = b->kind == VP_BEHAVIOUR_MA_CROSS;
    if (ma && strcmp(key, "fast") == 0) {
        *given |= 1;
        return read_count(spec, key, val, 1, 1 << 20, &b->fast);
    }
    if (ma && strcmp(key, "slow") == 0) {
        *given |= 2;
        return read_count(spec, key, val, 2, 1 << 20, &b->slow);
    }
    if (ma && strcmp(key, "size") == 0) return read_count(spec, key, val, 0, VP_ENV_SIZE_CHOICES - 1, &b->size);
    if (strcmp(key, "epsilon") == 0) return read_epsilon(spec, val, &b->epsilon);
    VP_FAIL(VP_ERR_INVALID_ARG, "behaviour '%s': unknown option '%s' (%s)", spec, key,
            ma ? "ma_cross takes fast, slow, size and epsilon" : "random takes epsilon");
}

/* Appends ",epsilon=E" to the name when epsilon > 0. */
static void name_epsilon(vp_behaviour* b) {
    if (b->epsilon <= 0.0) return;
    // the shortest of 15 and 17 significant digits that reads back as the same double
    char v[40];
    snprintf(v, sizeof v, "%.15g", b->epsilon);
    if (strtod(v, NULL) != b->epsilon) snprintf(v, sizeof v, "%.17g", b->epsilon);
    const size_t n = strlen(b->name);
    snprintf(b->name + n, sizeof b->name - n, "%sepsilon=%s", strchr(b->name, ':') ? "," : ":", v);
}

vp_status vp_behaviour_parse(const char* spec, vp_behaviour* out) {
    VP_REQUIRE(spec != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_behaviour_parse: NULL argument");
    memset(out, 0, sizeof *out);
    const char* colon = strchr(spec, ':');
    const size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nlen == 6 && strncmp(spec, "random", 6) == 0) {
        out->kind = VP_BEHAVIOUR_RANDOM;
    } else if (nlen == 8 && strncmp(spec, "ma_cross", 8) == 0) {
        out->kind = VP_BEHAVIOUR_MA_CROSS;
        out->size = VP_ENV_SIZE_CHOICES - 1;
    } else {
        VP_FAIL(VP_ERR_INVALID_ARG, "behaviour '%s': unknown name '%.*s' (random, ma_cross:fast=N,slow=M[,size=I], "
                "or a checkpoint with --checkpoint)", spec, (int)nlen, spec);
    }
    // the options, comma-separated after the colon
    int given = 0;
    for (const char* p = colon ? colon + 1 : NULL; p;) {
        const char* comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        VP_TRY(apply_option(spec, p, n, out, &given));
        p = comma ? comma + 1 : NULL;
    }
    if (out->kind == VP_BEHAVIOUR_MA_CROSS) {
        VP_REQUIRE(given == 3, VP_ERR_INVALID_ARG, "behaviour '%s': ma_cross needs fast=N and slow=M", spec);
        VP_REQUIRE(out->fast < out->slow, VP_ERR_INVALID_ARG, "behaviour '%s': fast=%d must be below slow=%d", spec,
                   out->fast, out->slow);
        snprintf(out->name, sizeof out->name, "ma_cross:fast=%d,slow=%d,size=%d", out->fast, out->slow, out->size);
    } else {
        snprintf(out->name, sizeof out->name, "random");
    }
    name_epsilon(out);
    return VP_OK;
}

vp_status vp_behaviour_set_epsilon(vp_behaviour* b, double epsilon) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "vp_behaviour_set_epsilon: NULL behaviour");
    VP_REQUIRE(epsilon >= 0.0 && epsilon <= 1.0, VP_ERR_INVALID_ARG, "epsilon %g is not a probability in 0..1",
               epsilon);
    if (epsilon == 0.0 || b->epsilon == epsilon) return VP_OK;
    VP_REQUIRE(b->epsilon == 0.0, VP_ERR_INVALID_ARG, "behaviour '%s' already has epsilon %g, not %g", b->name,
               b->epsilon, epsilon);
    b->epsilon = epsilon;
    name_epsilon(b);
    return VP_OK;
}

vp_status vp_behaviour_policy(const vp_policy* p, const char* source, double epsilon, vp_behaviour* out) {
    VP_REQUIRE(p != NULL && source != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_behaviour_policy: NULL argument");
    VP_TRY(vp_policy_check(p));
    memset(out, 0, sizeof *out);
    out->kind = VP_BEHAVIOUR_POLICY;
    out->policy = p;
    VP_REQUIRE(strlen(source) + 40 < sizeof out->name, VP_ERR_INVALID_ARG,
               "behaviour: checkpoint path '%.100s...' is longer than %d bytes", source, VP_OFFLINE_BEHAVIOUR_MAX - 40);
    snprintf(out->name, sizeof out->name, "checkpoint:%s", source);
    return vp_behaviour_set_epsilon(out, epsilon);
}

/* The sum of closes t-n+1 .. t. */
static double close_sum(const double* close, int64_t t, int n) {
    double s = 0.0;
    for (int64_t k = t - n + 1; k <= t; ++k) s += close[k];
    return s;
}

int vp_ma_cross_dir(const double* close, int64_t t, int fast, int slow) {
    if (t + 1 < slow) return VP_ENV_DIR_FLAT;
    const double f = close_sum(close, t, fast) / fast, s = close_sum(close, t, slow) / slow;
    return f > s ? VP_ENV_DIR_LONG : f < s ? VP_ENV_DIR_SHORT : VP_ENV_DIR_FLAT;
}

float vp_behaviour_logp(const int32_t* own, const int32_t* taken, double epsilon, int uniform) {
    if (uniform) return (float)-log((double)VP_RECORD_JOINT_ACTIONS);
    int same = 1;
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) same &= own[br] == taken[br];
    const double p = epsilon / VP_RECORD_JOINT_ACTIONS + (same ? 1.0 - epsilon : 0.0);
    return (float)log(p);
}

vp_record_totals vp_record_totals_of(const vp_offline_data* d) {
    vp_record_totals t = {0, 0, 0.0};
    if (!d || !d->reward || !d->done) return t;
    t.rows = d->steps * d->n_envs;
    double sum = 0.0;
    for (int64_t r = 0; r < t.rows; ++r) {
        sum += d->reward[r];
        t.episodes += d->done[r] != 0.0f;
    }
    t.mean_reward = t.rows > 0 ? sum / (double)t.rows : 0.0;
    return t;
}
