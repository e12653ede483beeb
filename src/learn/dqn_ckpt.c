/* Checkpoints of a training run. last.safetensors (VP_CKPT_RESUME) holds every parameter
 * by name, the target parameters ("target."), the AdamW moments ("adam.m.", "adam.v.") and
 * step, the learner's statistics (and, with the signal bus on, its controls and signals), the
 * collection-step counter, the env state, the replay ring and (curiosity on) the forward
 * model's state as raw blocks, and the host counters, seeds and config as metadata: enough to
 * continue bit for bit. best.safetensors (VP_CKPT_BEST) holds the best parameters. Both
 * record the data trained on (vulpes.data.*: source, identity, bar interval, price scale).
 *
 * A data-parallel run (rank 0 writes; vulpes.ranks = N > 1) saves what every rank shares, the
 * parameters, target, moments, statistics, the collection-step counter and the counters,
 * without env.state and replay.state (each rank's own shard). A resume whose checkpoint or run
 * has more than one rank reads that shared state on any rank count (the config is the run's,
 * so the counters agree), restarts the rank's envs at their first episode and refills its
 * replay with the warm-up's random steps (docs/distributed.md, "Checkpoints and resume"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dqn_check.h"
#include "learn/replay_impl.h"
#include "learn/train_ckpt.h"
#include "vulpes/checkpoint.h"
#include "vulpes/dqn.h"


/* Every parameter of `flat` ([n_weights]) by its table name under `prefix`. */
static void add_params(vp_ckpt_list* l, const vp_model* m, const char* prefix, const vp_tensor* flat) {
    for (int i = 0; i < m->n_params; ++i)
        vp_ckpt_list_add(l, prefix, m->info[i].name, vp_model_param_view(m, flat, &m->info[i]));
}

/* The replay ring's whole block as one i32 view: it starts at the ring's first array
 * (bar_idx) and spans vp_replay_bytes; checked against every public field. */
static vp_status replay_block(const vp_trainer* t, vp_tensor* out) {
    vp_replay_fields f;
    VP_TRY(vp_replay_fields_get(t->replay, &f));
    const size_t bytes = vp_replay_bytes(vp_replay_get_cfg(t->replay));
    const char* base = (const char*)f.bar_idx.data;
    const vp_tensor* all[] = {&f.bar_idx, &f.next_bar_idx, &f.window_end, &f.portfolio, &f.next_portfolio,
                              &f.action,  &f.reward,       &f.discount,   &f.done,      &f.priority};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        const char* p = (const char*)all[i]->data;
        VP_REQUIRE(p >= base && p + vp_tensor_bytes(all[i]) <= base + bytes, VP_ERR_STATE,
                   "checkpoint: the replay ring's layout is not one block starting at bar_idx");
    }
    VP_REQUIRE(bytes % 4 == 0, VP_ERR_STATE, "checkpoint: replay block of %zu bytes", bytes);
    *out = vp_tensor_1d((void*)base, VP_I32, f.bar_idx.mem, (int64_t)(bytes / 4));
    return VP_OK;
}

/* Every tensor of a resume checkpoint; without the env state and the replay ring when
 * `shared` (what the ranks of a data-parallel run share). */
static vp_status resume_items(vp_trainer* t, vp_ckpt_list* l, int shared) {
    const vp_model* m = &t->learner.model;
    VP_TRY(vp_ckpt_list_init(l, 4 * m->n_params + 8));
    add_params(l, m, "", &m->params);
    add_params(l, m, "target.", &t->learner.target);
    add_params(l, m, "adam.m.", &t->learner.adam_m);
    add_params(l, m, "adam.v.", &t->learner.adam_v);
    vp_ckpt_list_add(l, "", "adam.step", t->learner.step);
    vp_ckpt_list_add(l, "", "learner.stats", t->learner.stats);
    if (t->learner.cfg.popart) vp_ckpt_list_add(l, "", "learner.popart", t->learner.popart);
    // the signal bus: its EMAs and counters, and the controls its rules move (bus on only)
    if (vp_signals_bus_on(&t->learner.cfg.signals)) {
        vp_ckpt_list_add(l, "", "learner.controls", t->learner.ctl);
        vp_ckpt_list_add(l, "", "learner.signals", t->learner.signals);
    }
    vp_ckpt_list_add(l, "", "collect.step", t->collector.step);
    if (shared) return VP_OK;
    // The env state: its one allocation, as raw 32-bit words.
    const vp_env* e = &t->env;
    vp_ckpt_list_add(l, "", "env.state",
                     vp_tensor_1d(e->storage.dev, VP_I32, e->storage.mem, (int64_t)(e->storage.bytes / 4)));
    vp_tensor rb;
    VP_TRY(replay_block(t, &rb));
    vp_ckpt_list_add(l, "", "replay.state", rb);
    // The forward model of curiosity: parameters, moments and step in one block, as raw words.
    if (t->curiosity) vp_ckpt_list_add(l, "", "curiosity.state", t->curiosity->state_words);
    return VP_OK;
}

vp_status vp_trainer_save(vp_trainer* t, const char* path, vp_ckpt_kind kind) {
    VP_REQUIRE(t != NULL && t->replay != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_trainer_save: NULL argument");
    VP_REQUIRE(kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG, "vp_trainer_save: bad kind %d", (int)kind);
    VP_TRY(vp_backend_sync(t->backend));
    char* yaml = NULL;
    VP_TRY(vp_config_to_yaml(&t->cfg, &yaml));

    // Metadata: what the file is, the config, counters, seeds and the best score.
    vp_ckpt_meta_list ml;
    memset(&ml, 0, sizeof ml);
    vp_ckpt_meta_head(&ml, kind, NULL, t->backend, yaml, &t->count, 1, t->best_val_sharpe, t->best_iteration);
    vp_ckpt_meta_add(&ml, "vulpes.rng", "philox4x32-10; counters: adam.step (taus), collect.step (exploration), "
                                "env.state (episode starts), replay.state (sampling)");
    vp_ckpt_meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    vp_ckpt_meta_u64(&ml, "vulpes.seed.env", t->parts.env.seed);
    vp_ckpt_meta_u64(&ml, "vulpes.seed.replay", t->parts.replay.seed);
    vp_ckpt_meta_u64(&ml, "vulpes.seed.collect", t->parts.collect.seed);
    char shards[160];
    snprintf(shards, sizeof shards, "not saved (a run of %d ranks: each rank's replay shard and env state stay with "
             "it; a resume refills them)", t->ranks);
    vp_ckpt_meta_add(&ml, "vulpes.replay", kind != VP_CKPT_RESUME ? "not saved" : t->ranks > 1 ? shards
                                                                                                : "saved (replay.state)");
    if (t->ranks > 1) vp_ckpt_meta_int(&ml, "vulpes.ranks", t->ranks);
    // The data trained on: source, identity, bar interval and price scale of the training span.
    vp_ckpt_data_meta dm;
    vp_status s = vp_ckpt_meta_data(&ml, t->data, &dm);
    if (s != VP_OK) {
        free(yaml);
        return vp_error_context(s, "writing checkpoint %s", path);
    }

    // Tensors: everything for a resume, the best parameters otherwise.
    vp_ckpt_list l;
    if (kind == VP_CKPT_RESUME) {
        s = resume_items(t, &l, t->ranks > 1);
    } else {
        s = vp_ckpt_list_init(&l, t->learner.model.n_params);
        if (s == VP_OK) add_params(&l, &t->learner.model, "", &t->best_params);
    }
    if (s == VP_OK) s = vp_checkpoint_save(t->backend, path, l.items, l.n, ml.pairs, ml.n);
    vp_ckpt_list_free(&l);
    free(yaml);
    return s;
}

vp_status vp_trainer_load(vp_trainer* t, const char* path) {
    VP_REQUIRE(t != NULL && t->replay != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_trainer_load: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    vp_status s = vp_ckpt_check_resume(ck, path);
    if (s == VP_OK) s = vp_ckpt_check_config(&t->cfg, t->data, ck);
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "learner.stats");
    if (s == VP_OK && vp_signals_bus_on(&t->learner.cfg.signals)) {
        s = vp_checkpoint_allow_nonfinite(ck, "learner.signals");
        if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "learner.controls");
    }

    // The host counters, checked before any tensor is read.
    vp_train_counters c;
    memset(&c, 0, sizeof c);
    int64_t best_it = -1;
    double best_sh = NAN;
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.iteration", &c.iteration);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.warmup_steps", &c.warmup_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.collect_steps", &c.collect_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.env_steps", &c.env_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.learner_steps", &c.learner_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.best_iteration", &best_it);
    if (s == VP_OK) s = vp_ckpt_meta_read_num(ck, "vulpes.best_val_sharpe", &best_sh);
    if (s == VP_OK) s = vp_dqn_check_counters(t, path, &c, best_it, best_sh);
    // The ranks of the run that wrote it (1 when the file does not say).
    int64_t ck_ranks = 1;
    if (s == VP_OK && vp_checkpoint_meta(ck, "vulpes.ranks")) s = vp_ckpt_meta_read_int(ck, "vulpes.ranks", &ck_ranks);
    if (s == VP_OK && (ck_ranks < 1 || ck_ranks > 65536))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s: metadata vulpes.ranks = %lld (allowed 1 .. 65536)",
                         path, (long long)ck_ranks);
    const int shared = ck_ranks > 1 || t->ranks > 1;

    // Tensors straight into the run's buffers, each checked before anything uses it.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l, shared);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) s = shared ? vp_dqn_check_shared(t, path, &c) : vp_dqn_check_restored(t, path, &c);
    if (s == VP_OK && shared) {
        // the rank's envs from their first episode (as made), its replay shard refilled by the
        // warm-up's random steps; the counters stay the checkpoint's
        for (int64_t k = 0; s == VP_OK && k < c.warmup_steps; ++k)
            s = vp_collector_random_step(&t->collector, (uint64_t)k);
    }
    if (s == VP_OK) {
        t->count = c;
        t->best_iteration = best_it;
        t->best_val_sharpe = best_sh;
        // The collector's current observation from the restored env state.
        s = vp_collector_observe(&t->collector);
    }
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_dqn_read_params(vp_backend* b, const vp_model* m, const char* path, vp_tensor* dst) {
    VP_REQUIRE(b != NULL && m != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG,
               "vp_dqn_read_params: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    vp_ckpt_list l;
    vp_status s = vp_ckpt_list_init(&l, m->n_params);
    if (s == VP_OK) {
        add_params(&l, m, "", dst);
        s = vp_checkpoint_read_all(b, ck, l.items, l.n);
    }
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_trainer_load_params(vp_trainer* t, const char* path, vp_tensor* dst) {
    VP_REQUIRE(t != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_trainer_load_params: NULL argument");
    return vp_dqn_read_params(t->backend, &t->learner.model, path, dst);
}
