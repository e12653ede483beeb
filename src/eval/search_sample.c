/* A trial's parameters: one uniform number per (search seed, trial, key) from the Philox
 * stream of vulpes/rng.h, mapped by the key's distribution to a value the key reads, then set
 * into the base config and checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "vulpes/rng.h"
#include "vulpes/search.h"

double vp_search_unit(uint64_t seed, int64_t trial, int key_index) {
    const vp_u32x4 r = vp_rng_draw(seed, (uint64_t)trial, (uint64_t)key_index);
    // 27 + 26 bits: a double in [0, 1) on the 2^-53 grid
    const uint64_t hi = r.v[0] >> 5, lo = r.v[1] >> 6;
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

/* Number v of parameter p rounded to 6 significant digits (so the config holds exactly the
 * text the tables show), kept inside [lo, hi], as text into out[VP_SEARCH_VALUE_MAX]. */
static void round6(const vp_search_param* p, double v, char* out) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    const double r = strtod(buf, NULL);
    if (r < p->lo) vp_eval_format_exact(p->lo, buf);
    else if (r > p->hi) vp_eval_format_exact(p->hi, buf);
    snprintf(out, VP_SEARCH_VALUE_MAX, "%s", buf);
}

/* The value of parameter p for unit number u as text into out[VP_SEARCH_VALUE_MAX]. */
static void value_of(const vp_search_param* p, double u, char* out) {
    switch (p->dist) {
    case VP_SEARCH_UNIFORM: {
        round6(p, p->lo + u * (p->hi - p->lo), out);
        break;
    }
    case VP_SEARCH_LOG_UNIFORM: {
        const double a = log(p->lo), b = log(p->hi);
        round6(p, exp(a + u * (b - a)), out);
        break;
    }
    case VP_SEARCH_INT: {
        const double span = p->hi - p->lo + 1.0;
        double k = floor(u * span);
        if (k >= span) k = span - 1.0;
        snprintf(out, VP_SEARCH_VALUE_MAX, "%.0f", p->lo + k);
        break;
    }
    default: {
        int k = (int)floor(u * (double)p->n_choices);
        if (k >= p->n_choices) k = p->n_choices - 1;
        snprintf(out, VP_SEARCH_VALUE_MAX, "%s", p->choices[k]);
        break;
    }
    }
}

void vp_search_sample(const vp_search_space* s, uint64_t seed, int64_t trial, vp_search_draw* out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n_params; ++i)
        value_of(&s->params[i], vp_search_unit(seed, trial, s->params[i].key_index), out->values[i]);
}

vp_status vp_search_apply(const vp_search_space* s, const vp_search_draw* d, int64_t trial, vp_config* cfg) {
    VP_REQUIRE(s && d && cfg, VP_ERR_INVALID_ARG, "vp_search_apply: NULL argument");
    char source[64];
    snprintf(source, sizeof source, "trial %lld", (long long)trial);
    for (int i = 0; i < s->n_params; ++i) VP_TRY(vp_config_set(cfg, s->params[i].key->name, d->values[i], source));
    vp_status st = vp_config_check(cfg);
    if (st == VP_OK) return VP_OK;
    // name the trial's values: which draw made the config invalid
    char vals[1024] = "";
    size_t n = 0;
    for (int i = 0; i < s->n_params && n < sizeof vals; ++i)
        n += (size_t)snprintf(vals + n, sizeof vals - n, "%s%s=%s", i ? ", " : "", s->params[i].key->name,
                              d->values[i]);
    return vp_error_context(st, "trial %lld (%s)", (long long)trial, vals);
}
