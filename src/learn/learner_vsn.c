/* The variable selection's mean weights as statistics of the "train" event (metrics.jsonl),
 * one key per feature column, named after the feature. */
#include "learn/learner_internal.h"
#include "learn/learner_vsn.h"
#include "vulpes/features.h"

/* "vsn.<name>" of every feature, in default column order (the training matrix's). */
#define VSN_KEY_(id, name, lookback, zscored) "vsn." name,
static const char* const VSN_KEYS[VP_FEAT_COUNT] = {VP_FEATURE_LIST(VSN_KEY_)};
#undef VSN_KEY_

vp_status vp_learner_selection_stats(const vp_learner* l, int64_t steps, vp_kv_list* out) {
    VP_REQUIRE(l != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_learner_selection_stats: NULL argument");
    const int F = l->cfg.model.n_features;
    // nothing to read before this process's first learner step (a fresh run, or a resume)
    if (!l->cfg.model.vsn || steps < 1 || F > VP_FEAT_COUNT || !vp_model_encoding(l->scratch->acts).data)
        return VP_OK;
    float w[VP_FEAT_COUNT];
    VP_TRY(vp_model_selection_weights(l->scratch->acts, w));
    for (int j = 0; j < F; ++j) vp_kv_add(out, VSN_KEYS[j], w[j], 0);
    return VP_OK;
}
