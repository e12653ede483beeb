/* The flat C API's search space (vulpes/api.h): a space read against a base config by the
 * search's own reader (vp_search_space_load / _parse), its keys described one by one, and a
 * trial's values checked against the base (vp_search_apply). */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "vulpes/search.h"

/* An open space and the base config it was read against. */
struct vp_api_space {
    vp_config base;         /* the base config */
    vp_search_space space;  /* the space */
};

int vp_api_space_open(const char* config, const char* const* overrides, int n_overrides, const char* space,
                      int is_text, vp_api_space** out) {
    VP_REQUIRE(out != NULL && space != NULL && n_overrides >= 0 && (n_overrides == 0 || overrides != NULL),
               VP_ERR_INVALID_ARG, "vp_api_space_open: out or space is NULL, or bad overrides");
    *out = NULL;
    vp_api_space* s = (vp_api_space*)calloc(1, sizeof *s);
    VP_REQUIRE(s != NULL, VP_ERR_OOM, "opening a search space: out of memory");
    vp_status st = vp_config_resolve(&s->base, config, n_overrides, (char* const*)overrides);
    if (st == VP_OK)
        st = is_text ? vp_search_space_parse(space, "the search space", &s->base, &s->space)
                     : vp_search_space_load(space, &s->base, &s->space);
    if (st != VP_OK) {
        free(s);
        return st;
    }
    *out = s;
    return VP_OK;
}

void vp_api_space_close(vp_api_space* s) { free(s); }

int vp_api_space_n_params(const vp_api_space* s) { return s ? s->space.n_params : 0; }

int vp_api_space_param(const vp_api_space* s, int i, char* key, int64_t cap, int* dist, double* lo, double* hi,
                       int* n_choices) {
    VP_REQUIRE(s != NULL && key != NULL && dist != NULL && lo != NULL && hi != NULL && n_choices != NULL,
               VP_ERR_INVALID_ARG, "vp_api_space_param: NULL argument");
    VP_REQUIRE(i >= 0 && i < s->space.n_params, VP_ERR_INVALID_ARG, "search space: key %d of %d", i,
               s->space.n_params);
    const vp_search_param* p = &s->space.params[i];
    VP_REQUIRE(cap > 0 && (int64_t)strlen(p->key->name) < cap, VP_ERR_INVALID_ARG,
               "search space: the key %s does not fit the %lld bytes given", p->key->name, (long long)cap);
    memcpy(key, p->key->name, strlen(p->key->name) + 1);
    *dist = (int)p->dist;
    const int choice = p->dist == VP_SEARCH_CHOICE;
    *lo = choice ? 0.0 : p->lo, *hi = choice ? 0.0 : p->hi;
    *n_choices = choice ? p->n_choices : 0;
    return VP_OK;
}

const char* vp_api_space_choice(const vp_api_space* s, int i, int j) {
    if (!s || i < 0 || i >= s->space.n_params) return NULL;
    const vp_search_param* p = &s->space.params[i];
    if (p->dist != VP_SEARCH_CHOICE || j < 0 || j >= p->n_choices) return NULL;
    return p->choices[j];
}

int vp_api_space_check(const vp_api_space* s, const char* const* values, int n, int64_t trial) {
    VP_REQUIRE(s != NULL && values != NULL, VP_ERR_INVALID_ARG, "vp_api_space_check: NULL argument");
    VP_REQUIRE(n == s->space.n_params, VP_ERR_INVALID_ARG, "search space: %d values given for its %d keys", n,
               s->space.n_params);
    vp_search_draw d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < n; ++i) {
        VP_REQUIRE(values[i] != NULL && strlen(values[i]) < VP_SEARCH_VALUE_MAX, VP_ERR_INVALID_ARG,
                   "search space: the value of %s is missing or longer than %d bytes", s->space.params[i].key->name,
                   VP_SEARCH_VALUE_MAX - 1);
        memcpy(d.values[i], values[i], strlen(values[i]) + 1);
    }
    vp_config cfg = s->base;
    return vp_search_apply(&s->space, &d, trial, &cfg);
}
