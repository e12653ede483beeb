/* The replay ring's public entry points: layout in one backend allocation, argument checks,
 * then the kernels of the backend's kind (CPU loops or CUDA kernels); the configuration's
 * defaults and checks are replay_cfg.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/replay_impl.h"
#include "vulpes/ops.h"

struct vp_replay {
    vp_replay_cfg cfg;                /* as given */
    vp_backend* backend;              /* where it lives and computes */
    const vp_replay_kernels* kernels; /* the backend's push, sample and update */
    vp_buffer block;                  /* the one allocation holding everything below */
    vp_replay_dev dev;                /* pointers into `block`, sizes, hyper-parameters */
};

/* ---- layout: every array at a 256-byte boundary of one block ---------------------------- */

/* Reserves `bytes` at the next 256-byte boundary of a running size; returns the offset. */
static size_t take(size_t* used, size_t bytes) {
    size_t at = (*used + 255u) / 256u * 256u;
    *used = at + bytes;
    return at;
}

/* Fills d's sizes and tree offsets from the cfg, and its pointers as offsets into `base`
 * (pointers stay NULL when base is NULL); returns the bytes needed. */
static size_t layout(const vp_replay_cfg* c, vp_replay_dev* d, char* base) {
    memset(d, 0, sizeof *d);
    const size_t C = (size_t)c->capacity, E = (size_t)c->n_envs, n = (size_t)c->n_step;
    const size_t P = (size_t)c->n_portfolio, NB = (size_t)c->n_branches;
    const size_t f = sizeof(float), i4 = sizeof(int32_t);

    /* sum-tree levels above the leaves, each ceil(C / 2^k) nodes */
    size_t tree_n = 0;
    while (((c->capacity - 1) >> d->depth) > 0) {
        d->depth += 1;
        d->level_off[d->depth] = (int64_t)tree_n;
        tree_n += (size_t)(((c->capacity - 1) >> d->depth) + 1);
    }

    const size_t tiles = (E + VP_REPLAY_SCAN_TILE - 1) / VP_REPLAY_SCAN_TILE;
    size_t used = 0, off[22];
    int k = 0;
    off[k++] = take(&used, C * i4);          /* bar */
    off[k++] = take(&used, C * i4);          /* next_bar */
    off[k++] = take(&used, C * i4);          /* wend */
    off[k++] = take(&used, C * P * f);       /* port */
    off[k++] = take(&used, C * P * f);       /* next_port */
    off[k++] = take(&used, C * NB * i4);     /* act */
    off[k++] = take(&used, C * f);           /* rew */
    off[k++] = take(&used, C * f);           /* disc */
    off[k++] = take(&used, C * i4);          /* done */
    off[k++] = take(&used, C * f);           /* prio */
    off[k++] = take(&used, tree_n * f);      /* tree */
    off[k++] = take(&used, C * i4);          /* owner */
    off[k++] = take(&used, E * i4);          /* p_count */
    off[k++] = take(&used, E * i4);          /* p_start */
    off[k++] = take(&used, n * E * i4);      /* p_bar */
    off[k++] = take(&used, n * E * i4);      /* p_wend */
    off[k++] = take(&used, n * E * P * f);   /* p_port */
    off[k++] = take(&used, n * E * NB * i4); /* p_act */
    off[k++] = take(&used, n * E * f);       /* p_rew */
    off[k++] = take(&used, E * i4);          /* emit_off */
    off[k++] = take(&used, tiles * i4);      /* tile_off */
    off[k++] = take(&used, sizeof(vp_replay_ctrl)); /* ctrl */
    /* the intrinsic columns, behind everything else (a ring without them keeps its layout) */
    size_t off_int[5] = {0, 0, 0, 0, 0};
    if (c->intrinsic) {
        off_int[0] = take(&used, C * f);         /* rew_int */
        off_int[1] = take(&used, C * P * f);     /* port1 */
        off_int[2] = take(&used, C * f);         /* done1 */
        off_int[3] = take(&used, n * E * f);     /* p_rew_int */
        off_int[4] = take(&used, n * E * P * f); /* p_port1 */
    }
    /* the HER columns, behind those (a ring without them keeps its layout) */
    size_t off_her[7] = {0, 0, 0, 0, 0, 0, 0};
    const size_t T = c->her ? (size_t)c->her_episodes : 0;
    if (c->her) {
        off_her[0] = take(&used, C * f);     /* goal_w */
        off_her[1] = take(&used, C * i4);    /* ep_env */
        off_her[2] = take(&used, C * i4);    /* ep_id */
        off_her[3] = take(&used, E * f);     /* p_ret */
        off_her[4] = take(&used, E * i4);    /* p_ep */
        off_her[5] = take(&used, T * E * f); /* tab_ret */
        off_her[6] = take(&used, T * E * i4); /* tab_id */
    }

    /* sizes and hyper-parameters */
    d->cap = c->capacity;
    d->n_envs = c->n_envs;
    d->n_port = c->n_portfolio;
    d->n_branch = c->n_branches;
    d->n_step = c->n_step;
    d->gamma = c->gamma;
    d->prioritized = c->prioritized ? 1 : 0;
    d->intrinsic = c->intrinsic ? 1 : 0;
    d->her = c->her ? 1 : 0;
    d->her_ratio = c->her ? c->her_ratio : 0.0f;
    d->her_lambda = c->her ? c->her_lambda : 0.0f;
    d->her_tab = c->her ? c->her_episodes : 0;
    d->alpha = c->alpha;
    d->eps = c->priority_eps;
    d->beta0 = c->beta0;
    d->beta_steps = c->beta_steps;
    d->seed = c->seed;
    d->stream = c->rng_stream;
    if (!base) return used;

    /* pointers */
    k = 0;
    d->bar = (int32_t*)(base + off[k++]);
    d->next_bar = (int32_t*)(base + off[k++]);
    d->wend = (int32_t*)(base + off[k++]);
    d->port = (float*)(base + off[k++]);
    d->next_port = (float*)(base + off[k++]);
    d->act = (int32_t*)(base + off[k++]);
    d->rew = (float*)(base + off[k++]);
    d->disc = (float*)(base + off[k++]);
    d->done = (int32_t*)(base + off[k++]);
    d->prio = (float*)(base + off[k++]);
    d->tree = (float*)(base + off[k++]);
    d->owner = (int32_t*)(base + off[k++]);
    d->p_count = (int32_t*)(base + off[k++]);
    d->p_start = (int32_t*)(base + off[k++]);
    d->p_bar = (int32_t*)(base + off[k++]);
    d->p_wend = (int32_t*)(base + off[k++]);
    d->p_port = (float*)(base + off[k++]);
    d->p_act = (int32_t*)(base + off[k++]);
    d->p_rew = (float*)(base + off[k++]);
    d->emit_off = (int32_t*)(base + off[k++]);
    d->tile_off = (int32_t*)(base + off[k++]);
    d->ctrl = (vp_replay_ctrl*)(base + off[k++]);
    if (c->intrinsic) {
        d->rew_int = (float*)(base + off_int[0]);
        d->port1 = (float*)(base + off_int[1]);
        d->done1 = (float*)(base + off_int[2]);
        d->p_rew_int = (float*)(base + off_int[3]);
        d->p_port1 = (float*)(base + off_int[4]);
    }
    if (c->her) {
        d->goal_w = (float*)(base + off_her[0]);
        d->ep_env = (int32_t*)(base + off_her[1]);
        d->ep_id = (int32_t*)(base + off_her[2]);
        d->p_ret = (float*)(base + off_her[3]);
        d->p_ep = (int32_t*)(base + off_her[4]);
        d->tab_ret = (float*)(base + off_her[5]);
        d->tab_id = (int32_t*)(base + off_her[6]);
    }
    return used;
}

size_t vp_replay_bytes(const vp_replay_cfg* c) {
    if (vp_replay_cfg_check(c) != VP_OK) {
        vp_clear_error();
        return 0;
    }
    vp_replay_dev d;
    return layout(c, &d, NULL);
}

/* ---- life cycle ------------------------------------------------------------------------- */

/* A 1-D view of n elements of the ring's memory. */
static vp_tensor view(const vp_replay* r, void* p, vp_dtype dt, int64_t n) {
    return vp_tensor_1d(p, dt, r->block.mem, n);
}

vp_status vp_replay_reset(vp_replay* r) {
    VP_REQUIRE(r != NULL, VP_ERR_INVALID_ARG, "vp_replay_reset: ring is NULL");
    vp_replay_dev* d = &r->dev;
    /* empty slots have priority 0; no step is pending; no slot is claimed */
    vp_tensor t = view(r, d->prio, VP_F32, d->cap);
    VP_TRY(vp_fill(r->backend, &t, 0.0f));
    t = view(r, d->p_count, VP_I32, d->n_envs);
    VP_TRY(vp_fill_i32(r->backend, &t, 0));
    t = view(r, d->p_start, VP_I32, d->n_envs);
    VP_TRY(vp_fill_i32(r->backend, &t, 0));
    t = view(r, d->owner, VP_I32, d->cap);
    VP_TRY(vp_fill_i32(r->backend, &t, -1));
    if (d->her) {
        /* no episode has run: returns 0, no episode finished, the tables empty */
        t = view(r, d->p_ret, VP_F32, d->n_envs);
        VP_TRY(vp_fill(r->backend, &t, 0.0f));
        t = view(r, d->p_ep, VP_I32, d->n_envs);
        VP_TRY(vp_fill_i32(r->backend, &t, 0));
        t = view(r, d->tab_id, VP_I32, (int64_t)d->her_tab * d->n_envs);
        VP_TRY(vp_fill_i32(r->backend, &t, -1));
    }
    /* counters: empty, step 0, max priority 1 */
    vp_replay_ctrl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.max_priority = 1.0f;
    ctl.beta = r->cfg.beta0;
    t = view(r, d->ctrl, VP_I32, (int64_t)(sizeof ctl / sizeof(int32_t)));
    return vp_upload(r->backend, &t, &ctl, sizeof ctl);
}

vp_status vp_replay_init(vp_replay** out, vp_backend* b, const vp_replay_cfg* cfg) {
    VP_REQUIRE(out != NULL && b != NULL, VP_ERR_INVALID_ARG, "vp_replay_init: out or backend is NULL");
    *out = NULL;
    VP_TRY(vp_replay_cfg_check(cfg));
    const void* kernels = NULL;
    VP_TRY(vp_kernels_select("vp_replay_init", "replay kernels", b, &vp_replay_cpu, VP_KERNELS_CUDA(vp_replay_cuda),
                             &kernels));
    vp_replay* r = (vp_replay*)calloc(1, sizeof *r);
    VP_REQUIRE(r != NULL, VP_ERR_OOM, "vp_replay_init: out of host memory");
    r->cfg = *cfg;
    r->backend = b;
    r->kernels = (const vp_replay_kernels*)kernels;
    size_t bytes = layout(cfg, &r->dev, NULL);
    vp_status s = vp_buffer_alloc(b, vp_backend_native_mem(b), bytes, &r->block);
    if (s == VP_OK) {
        layout(cfg, &r->dev, (char*)r->block.dev);
        s = vp_replay_reset(r);
    }
    if (s != VP_OK) {
        vp_replay_free(r);
        return vp_error_context(s, "vp_replay_init (capacity %lld, %zu bytes)", (long long)cfg->capacity, bytes);
    }
    *out = r;
    return VP_OK;
}

void vp_replay_free(vp_replay* r) {
    if (!r) return;
    vp_buffer_free(r->backend, &r->block);
    free(r);
}

const vp_replay_cfg* vp_replay_get_cfg(const vp_replay* r) { return r ? &r->cfg : NULL; }

vp_status vp_replay_fields_get(const vp_replay* r, vp_replay_fields* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_replay_fields_get: ring or out is NULL");
    const vp_replay_dev* d = &r->dev;
    const vp_mem m = r->block.mem;
    out->bar_idx = view(r, d->bar, VP_I32, d->cap);
    out->next_bar_idx = view(r, d->next_bar, VP_I32, d->cap);
    out->window_end = view(r, d->wend, VP_I32, d->cap);
    out->portfolio = vp_tensor_2d(d->port, VP_F32, m, d->cap, d->n_port);
    out->next_portfolio = vp_tensor_2d(d->next_port, VP_F32, m, d->cap, d->n_port);
    out->action = vp_tensor_2d(d->act, VP_I32, m, d->cap, d->n_branch);
    out->reward = view(r, d->rew, VP_F32, d->cap);
    memset(&out->reward_int, 0, sizeof out->reward_int);
    memset(&out->portfolio_1, 0, sizeof out->portfolio_1);
    memset(&out->done_1, 0, sizeof out->done_1);
    if (d->intrinsic) {
        out->reward_int = view(r, d->rew_int, VP_F32, d->cap);
        out->portfolio_1 = vp_tensor_2d(d->port1, VP_F32, m, d->cap, d->n_port);
        out->done_1 = view(r, d->done1, VP_F32, d->cap);
    }
    memset(&out->goal_weight, 0, sizeof out->goal_weight);
    memset(&out->episode_env, 0, sizeof out->episode_env);
    memset(&out->episode_id, 0, sizeof out->episode_id);
    if (d->her) {
        out->goal_weight = view(r, d->goal_w, VP_F32, d->cap);
        out->episode_env = view(r, d->ep_env, VP_I32, d->cap);
        out->episode_id = view(r, d->ep_id, VP_I32, d->cap);
    }
    out->discount = view(r, d->disc, VP_F32, d->cap);
    out->done = view(r, d->done, VP_I32, d->cap);
    out->priority = view(r, d->prio, VP_F32, d->cap);
    return VP_OK;
}

vp_status vp_replay_stats_read(vp_replay* r, vp_replay_stats* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_replay_stats_read: ring or out is NULL");
    vp_replay_ctrl ctl;
    vp_tensor t = view(r, r->dev.ctrl, VP_I32, (int64_t)(sizeof ctl / sizeof(int32_t)));
    VP_TRY(vp_download(r->backend, &ctl, &t, sizeof ctl));
    out->size = ctl.size;
    out->head = ctl.head;
    out->pushes = ctl.pushes;
    out->emitted = ctl.emitted;
    out->sample_step = ctl.sample_step;
    out->max_priority = ctl.max_priority;
    out->beta = ctl.beta;
    out->total = ctl.total;
    return VP_OK;
}

/* ---- checks, then the backend's kernels ---------------------------------------------------- */

vp_status vp_replay_push(vp_replay* r, const vp_replay_step* s) {
    static const char* fn = "vp_replay_push";
    VP_REQUIRE(r != NULL && s != NULL, VP_ERR_INVALID_ARG, "%s: ring or step is NULL", fn);
    const int64_t E = r->cfg.n_envs, P = r->cfg.n_portfolio, NB = r->cfg.n_branches;
    VP_TRY(vp_tensor_check_rows(fn, "bar_idx", r->backend, &s->bar_idx, VP_I32, E, 1));
    VP_TRY(vp_tensor_check_rows(fn, "window_end", r->backend, &s->window_end, VP_I32, E, 1));
    VP_TRY(vp_tensor_check_rows(fn, "portfolio", r->backend, &s->portfolio, VP_F32, E, P));
    VP_TRY(vp_tensor_check_rows(fn, "action", r->backend, &s->action, VP_I32, E, NB));
    VP_TRY(vp_tensor_check_rows(fn, "reward", r->backend, &s->reward, VP_F32, E, 1));
    const int done_f32 = s->done.dtype == VP_F32;
    VP_TRY(vp_tensor_check_rows(fn, "done", r->backend, &s->done, done_f32 ? VP_F32 : VP_I32, E, 1));
    VP_TRY(vp_tensor_check_rows(fn, "next_bar_idx", r->backend, &s->next_bar_idx, VP_I32, E, 1));
    VP_TRY(vp_tensor_check_rows(fn, "next_portfolio", r->backend, &s->next_portfolio, VP_F32, E, P));
    // an intrinsic reward only into a ring that keeps the intrinsic return
    if (s->reward_int.data) {
        VP_REQUIRE(r->cfg.intrinsic, VP_ERR_INVALID_ARG,
                   "%s: the step carries reward_int but the ring keeps no intrinsic return (made with intrinsic 0)", fn);
        VP_TRY(vp_tensor_check_rows(fn, "reward_int", r->backend, &s->reward_int, VP_F32, E, 1));
    }
    vp_replay_step_dev sd = {(const int32_t*)s->bar_idx.data,  (const int32_t*)s->window_end.data,
                             (const float*)s->portfolio.data,  (const int32_t*)s->action.data,
                             (const float*)s->reward.data,     s->done.data,
                             (const int32_t*)s->next_bar_idx.data, (const float*)s->next_portfolio.data,
                             (const float*)s->reward_int.data, done_f32};
    return r->kernels->push(r->backend, &r->dev, &sd);
}

vp_status vp_replay_sample(vp_replay* r, vp_replay_batch* out) {
    static const char* fn = "vp_replay_sample";
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "%s: ring or batch is NULL", fn);
    const int64_t B = vp_tensor_numel(&out->indices), P = r->cfg.n_portfolio, NB = r->cfg.n_branches;
    VP_REQUIRE(B >= 1 && B <= INT32_MAX, VP_ERR_SHAPE, "%s: batch size (numel of indices) is %lld", fn, (long long)B);
    VP_TRY(vp_tensor_check_rows(fn, "indices", r->backend, &out->indices, VP_I32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "bar_idx", r->backend, &out->bar_idx, VP_I32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "next_bar_idx", r->backend, &out->next_bar_idx, VP_I32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "portfolio", r->backend, &out->portfolio, VP_F32, B, P));
    VP_TRY(vp_tensor_check_rows(fn, "next_portfolio", r->backend, &out->next_portfolio, VP_F32, B, P));
    VP_TRY(vp_tensor_check_rows(fn, "actions", r->backend, &out->actions, VP_I32, B, NB));
    VP_TRY(vp_tensor_check_rows(fn, "reward", r->backend, &out->reward, VP_F32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "discount", r->backend, &out->discount, VP_F32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "is_weight", r->backend, &out->is_weight, VP_F32, B, 1));
    if (out->reward_int.data) VP_TRY(vp_tensor_check_rows(fn, "reward_int", r->backend, &out->reward_int, VP_F32, B, 1));
    if (out->portfolio_1.data)
        VP_TRY(vp_tensor_check_rows(fn, "portfolio_1", r->backend, &out->portfolio_1, VP_F32, B, P));
    if (out->done_1.data) VP_TRY(vp_tensor_check_rows(fn, "done_1", r->backend, &out->done_1, VP_F32, B, 1));
    if (out->reward_goal.data)
        VP_TRY(vp_tensor_check_rows(fn, "reward_goal", r->backend, &out->reward_goal, VP_F32, B, 1));
    if (out->relabelled.data)
        VP_TRY(vp_tensor_check_rows(fn, "relabelled", r->backend, &out->relabelled, VP_I32, B, 1));
    vp_replay_batch_dev o = {B,
                             (int32_t*)out->indices.data,
                             (int32_t*)out->bar_idx.data,
                             (int32_t*)out->next_bar_idx.data,
                             (float*)out->portfolio.data,
                             (float*)out->next_portfolio.data,
                             (int32_t*)out->actions.data,
                             (float*)out->reward.data,
                             (float*)out->discount.data,
                             (float*)out->is_weight.data,
                             (float*)out->reward_int.data,
                             (float*)out->portfolio_1.data,
                             (float*)out->done_1.data,
                             (float*)out->reward_goal.data,
                             (int32_t*)out->relabelled.data};
    return r->kernels->sample(r->backend, &r->dev, &o);
}

vp_status vp_replay_update_priorities(vp_replay* r, const vp_tensor* indices, const vp_tensor* loss) {
    static const char* fn = "vp_replay_update_priorities";
    VP_REQUIRE(r != NULL && indices != NULL && loss != NULL, VP_ERR_INVALID_ARG, "%s: ring, indices or loss is NULL",
               fn);
    const int64_t B = vp_tensor_numel(indices);
    VP_REQUIRE(B >= 1 && B <= INT32_MAX, VP_ERR_SHAPE, "%s: batch size (numel of indices) is %lld", fn, (long long)B);
    VP_TRY(vp_tensor_check_rows(fn, "indices", r->backend, indices, VP_I32, B, 1));
    VP_TRY(vp_tensor_check_rows(fn, "loss", r->backend, loss, VP_F32, B, 1));
    const int32_t* idx = (const int32_t*)indices->data;
    const float* l = (const float*)loss->data;
    return r->kernels->update(r->backend, &r->dev, idx, l, B);
}

/* ---- a restored ring's checks --------------------------------------------------------------- */

const vp_replay_dev* vp_replay_dev_get(const vp_replay* r) { return r ? &r->dev : NULL; }

vp_status vp_replay_check_state(vp_replay* r, const vp_replay_expect* x) {
    VP_REQUIRE(r != NULL && x != NULL && x->action_size != NULL, VP_ERR_INVALID_ARG,
               "vp_replay_check_state: ring, expectation or action sizes is NULL");
    VP_REQUIRE((x->env_t == NULL) == (x->env_wend == NULL), VP_ERR_INVALID_ARG,
               "vp_replay_check_state: env_t and env_wend go together");
    vp_replay_dev h;
    const size_t bytes = layout(&r->cfg, &h, NULL);
    char* host = (char*)malloc(bytes);
    VP_REQUIRE(host != NULL, VP_ERR_OOM, "vp_replay_check_state: out of host memory for %zu bytes", bytes);
    vp_tensor all = view(r, r->block.dev, VP_I32, (int64_t)(bytes / 4));
    vp_status s = vp_download(r->backend, host, &all, bytes);
    if (s == VP_OK) {
        layout(&r->cfg, &h, host);
        s = vp_replay_check_host(&h, x);
    }
    free(host);
    return s;
}
