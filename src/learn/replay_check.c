/* A restored replay ring's checks, on a host copy of its block: the control words, the
 * pending n-step entries and every stored slot against what the resumed run expects
 * (vp_replay_check_state downloads the block, replay.c). */
#include <math.h>
#include <string.h>

#include "learn/replay_impl.h"

#define RS_FAIL(...) return vp_set_error(VP_ERR_PARSE, VP_WHERE, "vp_replay_check_state: " __VA_ARGS__)

/* A bar index of `what` at `where` i inside [lo, hi). */
static vp_status check_bar(const char* what, const char* where, int64_t i, int32_t v, int64_t lo, int64_t hi) {
    if (v < lo || v >= hi)
        RS_FAIL("%s %lld has %s %d (allowed %lld .. %lld)", where, (long long)i, what, (int)v, (long long)lo,
                (long long)hi - 1);
    return VP_OK;
}

/* n floats of `what` at `where` i, each finite. */
static vp_status check_finite(const char* what, const char* where, int64_t i, const float* v, int n) {
    for (int k = 0; k < n; ++k)
        if (!isfinite(v[k])) RS_FAIL("%s %lld has %s[%d] = %g (must be finite)", where, (long long)i, what, k, (double)v[k]);
    return VP_OK;
}

/* NB action choices at `where` i, each inside its branch. */
static vp_status check_action(const char* where, int64_t i, const int32_t* a, int nb, const int* size) {
    for (int k = 0; k < nb; ++k)
        if (a[k] < 0 || a[k] >= size[k])
            RS_FAIL("%s %lld has action[%d] = %d (allowed 0 .. %d)", where, (long long)i, k, (int)a[k], (int)size[k] - 1);
    return VP_OK;
}

/* The counters: head, size and emitted agree with each other and the run's push and sample counts. */
static vp_status check_ctrl(const vp_replay_dev* h, const vp_replay_expect* x) {
    const vp_replay_ctrl* c = h->ctrl;
    const int64_t C = h->cap, E = h->n_envs;
    if (x->pushes < 0 || x->pushes > INT64_MAX / E) RS_FAIL("expected push count %lld is out of range", (long long)x->pushes);
    if (c->pushes != x->pushes)
        RS_FAIL("pushes = %lld, the run's counters say %lld", (long long)c->pushes, (long long)x->pushes);
    if (c->sample_step != x->samples)
        RS_FAIL("sample_step = %lld, the run's counters say %lld", (long long)c->sample_step, (long long)x->samples);
    if (c->emitted < 0 || c->emitted > c->pushes * E)
        RS_FAIL("emitted = %lld (allowed 0 .. pushes x n_envs = %lld)", (long long)c->emitted, (long long)(c->pushes * E));
    const int64_t size = c->emitted < C ? c->emitted : C;
    if (c->size != size)
        RS_FAIL("size = %lld, but %lld transitions were emitted into a ring of %lld (size must be %lld)",
                (long long)c->size, (long long)c->emitted, (long long)C, (long long)size);
    if (c->head != c->emitted % C)
        RS_FAIL("head = %lld, but %lld transitions were emitted into a ring of %lld (head must be %lld)",
                (long long)c->head, (long long)c->emitted, (long long)C, (long long)(c->emitted % C));
    if (c->base < 0 || c->base >= C) RS_FAIL("base = %lld (allowed 0 .. %lld)", (long long)c->base, (long long)C - 1);
    if (!(isfinite(c->max_priority) && c->max_priority >= 1.0f))
        RS_FAIL("max_priority = %g (must be finite and >= 1)", (double)c->max_priority);
    if (!(c->beta >= 0.0f && c->beta <= 1.0f)) RS_FAIL("beta = %g (allowed 0 .. 1)", (double)c->beta);
    if (!(isfinite(c->total) && c->total >= 0.0f)) RS_FAIL("total = %g (must be finite and >= 0)", (double)c->total);
    return VP_OK;
}

/* Env e's pending window: counts in range, every pending step well formed and, when the envs
 * are given, the env's last steps of its current episode. Adds the pending count to *pending. */
static vp_status check_pending(const vp_replay_dev* h, const vp_replay_expect* x, int64_t e, int64_t* pending) {
    const int64_t E = h->n_envs;
    const int n = h->n_step, P = h->n_port, NB = h->n_branch;
    const int c = h->p_count[e], st = h->p_start[e];
    if (c < 0 || c >= n) RS_FAIL("env %lld has %d pending steps (allowed 0 .. n_step - 1 = %d)", (long long)e, c, n - 1);
    if (st < 0 || st >= n) RS_FAIL("env %lld has pending start %d (allowed 0 .. %d)", (long long)e, st, n - 1);
    if (x->env_t) {
        // The pending steps are the env's last min(steps into its episode, n - 1) decisions.
        const int64_t into = (int64_t)x->env_t[e] - ((int64_t)x->env_wend[e] - x->episode_bars);
        const int64_t want = into < n - 1 ? into : n - 1;
        if (c != want)
            RS_FAIL("env %lld has %d pending steps, but it is %lld steps into its episode (n_step %d: %lld pending)",
                    (long long)e, c, (long long)into, n, (long long)want);
    }
    for (int j = 0; j < c; ++j) {
        const int64_t q = (st + j) % n, at = q * E + e;
        VP_TRY(check_bar("bar_idx", "pending step of env", e, h->p_bar[at], x->bar_begin, x->bar_end));
        VP_TRY(check_bar("window_end", "pending step of env", e, h->p_wend[at], (int64_t)h->p_bar[at] + 1, x->bar_end));
        if (x->env_t && (h->p_bar[at] != x->env_t[e] - c + j || h->p_wend[at] != x->env_wend[e]))
            RS_FAIL("env %lld's pending step %d has bar %d, window_end %d; the env is at bar %d, window_end %d (need "
                    "bar %d)", (long long)e, j, (int)h->p_bar[at], (int)h->p_wend[at], (int)x->env_t[e],
                    (int)x->env_wend[e], (int)(x->env_t[e] - c + j));
        VP_TRY(check_finite("portfolio", "pending step of env", e, h->p_port + at * P, P));
        VP_TRY(check_finite("reward", "pending step of env", e, h->p_rew + at, 1));
        if (h->intrinsic) {
            VP_TRY(check_finite("reward_int", "pending step of env", e, h->p_rew_int + at, 1));
            VP_TRY(check_finite("portfolio_1", "pending step of env", e, h->p_port1 + at * P, P));
        }
        VP_TRY(check_action("pending step of env", e, h->p_act + at * NB, NB, x->action_size));
    }
    *pending += c;
    if (h->her) {
        // The running episode return is finite; the table holds only finished episodes of this env.
        VP_TRY(check_finite("episode return", "env", e, h->p_ret + e, 1));
        if (h->p_ep[e] < 0) RS_FAIL("env %lld has %d finished episodes (must be >= 0)", (long long)e, (int)h->p_ep[e]);
        for (int k = 0; k < h->her_tab; ++k) {
            const int64_t row = (int64_t)k * E + e;
            const int32_t id = h->tab_id[row];
            if (id == -1) continue;
            if (id < 0 || id >= h->p_ep[e] || id % h->her_tab != k)
                RS_FAIL("env %lld's episode table row %d holds episode %d (allowed -1, or an episode below %d "
                        "that is %d mod %d)", (long long)e, k, (int)id, (int)h->p_ep[e], k, h->her_tab);
            VP_TRY(check_finite("achieved return", "env", e, h->tab_ret + row, 1));
        }
    }
    return VP_OK;
}

/* Stored slot i (i < size): bars inside the span, finite vectors, actions in range, a
 * discount in [0, 1], a done code, a priority in [0, max_priority]. */
static vp_status check_slot(const vp_replay_dev* h, const vp_replay_expect* x, int64_t i) {
    const int P = h->n_port, NB = h->n_branch;
    VP_TRY(check_bar("bar_idx", "slot", i, h->bar[i], x->bar_begin, x->bar_end));
    VP_TRY(check_bar("window_end", "slot", i, h->wend[i], (int64_t)h->bar[i] + 1, x->bar_end));
    VP_TRY(check_bar("next_bar_idx", "slot", i, h->next_bar[i], x->bar_begin, x->bar_end));
    VP_TRY(check_finite("portfolio", "slot", i, h->port + i * P, P));
    VP_TRY(check_finite("next_portfolio", "slot", i, h->next_port + i * P, P));
    VP_TRY(check_action("slot", i, h->act + i * NB, NB, x->action_size));
    VP_TRY(check_finite("reward", "slot", i, h->rew + i, 1));
    if (h->intrinsic) {
        VP_TRY(check_finite("reward_int", "slot", i, h->rew_int + i, 1));
        VP_TRY(check_finite("portfolio_1", "slot", i, h->port1 + i * P, P));
        if (h->done1[i] != 0.0f && h->done1[i] != 1.0f)
            RS_FAIL("slot %lld has done_1 %g (allowed 0 or 1)", (long long)i, (double)h->done1[i]);
    }
    if (h->her) {
        if (h->ep_env[i] < 0 || h->ep_env[i] >= h->n_envs)
            RS_FAIL("slot %lld has episode env %d (allowed 0 .. %d)", (long long)i, (int)h->ep_env[i], h->n_envs - 1);
        if (h->ep_id[i] < 0 || h->ep_id[i] > h->p_ep[h->ep_env[i]])
            RS_FAIL("slot %lld has episode %d (allowed 0 .. its env's current episode %d)", (long long)i,
                    (int)h->ep_id[i], (int)h->p_ep[h->ep_env[i]]);
        if (!(h->goal_w[i] >= 0.0f && h->goal_w[i] <= 1.0f))
            RS_FAIL("slot %lld has goal weight %g (allowed 0 .. 1)", (long long)i, (double)h->goal_w[i]);
    }
    if (!(h->disc[i] >= 0.0f && h->disc[i] <= 1.0f))
        RS_FAIL("slot %lld has discount %g (allowed 0 .. 1)", (long long)i, (double)h->disc[i]);
    if (h->done[i] < 0 || h->done[i] > 2) RS_FAIL("slot %lld has done code %d (allowed 0 .. 2)", (long long)i, (int)h->done[i]);
    if (!(h->prio[i] >= 0.0f && h->prio[i] <= h->ctrl->max_priority))
        RS_FAIL("slot %lld has priority %g (allowed 0 .. max_priority %g)", (long long)i, (double)h->prio[i],
                (double)h->ctrl->max_priority);
    return VP_OK;
}

/* Checks a host copy of the ring (pointers of h into it). */
vp_status vp_replay_check_host(const vp_replay_dev* h, const vp_replay_expect* x) {
    VP_TRY(check_ctrl(h, x));
    const int64_t C = h->cap, E = h->n_envs, size = h->ctrl->size;
    // Every step pushed is pending until it is emitted, exactly once.
    int64_t pending = 0;
    for (int64_t e = 0; e < E; ++e) VP_TRY(check_pending(h, x, e, &pending));
    if (h->ctrl->emitted + pending != h->ctrl->pushes * E)
        RS_FAIL("emitted %lld + pending %lld transitions != pushes %lld x n_envs %lld", (long long)h->ctrl->emitted,
                (long long)pending, (long long)h->ctrl->pushes, (long long)E);
    for (int64_t i = 0; i < size; ++i) VP_TRY(check_slot(h, x, i));
    // Empty slots have no priority mass (sampling never reaches them); no slot is claimed.
    for (int64_t i = size; i < C; ++i)
        if (h->prio[i] != 0.0f) RS_FAIL("empty slot %lld (size %lld) has priority %g (must be 0)", (long long)i,
                                        (long long)size, (double)h->prio[i]);
    for (int64_t i = 0; i < C; ++i)
        if (h->owner[i] != -1) RS_FAIL("slot %lld has owner %d (must be -1 between calls)", (long long)i, (int)h->owner[i]);
    return VP_OK;
}
