/* What the checkpoints of PPO, IQL and the Decision Transformer share: a network's parameter
 * tensors by name, the AdamW state, writing a save, reading parameters and a resume's counters. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/algo_ckpt.h"

int vp_ckpt_net_count(vp_ckpt_net n) { return n.tensors(n.net, NULL, NULL, NULL, 0); }

vp_status vp_ckpt_add_net(vp_ckpt_list* l, vp_ckpt_net n, const char* prefix, const vp_tensor* flat) {
    const int count = vp_ckpt_net_count(n);
    const char** names = (const char**)calloc((size_t)count, sizeof *names);
    vp_tensor* views = (vp_tensor*)calloc((size_t)count, sizeof *views);
    if (!names || !views) {
        free(names);
        free(views);
        VP_FAIL(VP_ERR_OOM, "checkpoint: out of host memory for %d tensor names", count);
    }
    n.tensors(n.net, flat, names, views, count);
    for (int i = 0; i < count; ++i) vp_ckpt_list_add(l, prefix, names[i], views[i]);
    free(names);
    free(views);
    return VP_OK;
}

vp_status vp_ckpt_add_adam(vp_ckpt_list* l, vp_ckpt_net n, const vp_tensor* m, const vp_tensor* v, vp_tensor step) {
    VP_TRY(vp_ckpt_add_net(l, n, "adam.m.", m));
    VP_TRY(vp_ckpt_add_net(l, n, "adam.v.", v));
    vp_ckpt_list_add(l, "", "adam.step", step);
    return VP_OK;
}

vp_status vp_ckpt_net_list(vp_ckpt_list* l, vp_ckpt_net n, const vp_tensor* flat) {
    VP_TRY(vp_ckpt_list_init(l, vp_ckpt_net_count(n)));
    return vp_ckpt_add_net(l, n, "", flat);
}

vp_status vp_ckpt_save_begin(vp_ckpt_meta_list* ml, char** yaml, const char* who, vp_backend* b, const vp_config* cfg,
                             vp_ckpt_kind kind, const char* algo, const vp_train_counters* c, double best_val_sharpe,
                             int64_t best_iteration) {
    *yaml = NULL;
    VP_REQUIRE(kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG, "%s: bad kind %d", who, (int)kind);
    VP_TRY(vp_backend_sync(b));
    VP_TRY(vp_config_to_yaml(cfg, yaml));
    memset(ml, 0, sizeof *ml);
    vp_ckpt_meta_head(ml, kind, algo, b, *yaml, c, 0, best_val_sharpe, best_iteration);
    return VP_OK;
}

vp_status vp_ckpt_save_list(vp_backend* b, const char* path, vp_status s, vp_ckpt_list* l,
                            const vp_ckpt_meta_list* ml, char* yaml) {
    if (s == VP_OK) s = vp_checkpoint_save(b, path, l->items, l->n, ml->pairs, ml->n);
    vp_ckpt_list_free(l);
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "writing checkpoint %s", path);
    return VP_OK;
}

vp_status vp_ckpt_open_algo(vp_checkpoint** ck, const char* path, const char* algo, const char* what) {
    *ck = NULL;
    VP_TRY(vp_checkpoint_open(ck, path));
    const char* found = vp_checkpoint_meta(*ck, "vulpes.algo");
    if (found && strcmp(found, algo) == 0) return VP_OK;
    vp_status s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s holds no %s (vulpes.algo '%s')", path, what,
                               found ? found : "(none)");
    vp_checkpoint_close(*ck);
    *ck = NULL;
    return s;
}

vp_status vp_ckpt_read_net(vp_backend* b, const vp_checkpoint* ck, vp_ckpt_net n, vp_tensor* flat) {
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    vp_status s = vp_ckpt_net_list(&l, n, flat);
    if (s == VP_OK) s = vp_checkpoint_read_all(b, ck, l.items, l.n);
    vp_ckpt_list_free(&l);
    return s;
}

vp_status vp_ckpt_read_params(vp_backend* b, vp_ckpt_net n, const char* path, const char* algo, const char* what,
                              vp_tensor* flat) {
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_ckpt_open_algo(&ck, path, algo, what));
    vp_status s = vp_ckpt_read_net(b, ck, n, flat);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_ckpt_resume_begin(vp_checkpoint* ck, const vp_config* cfg, const vp_train_data* d, const char* stats,
                               const char* grad_norm) {
    VP_TRY(vp_ckpt_check_config(cfg, d, ck));
    VP_TRY(vp_checkpoint_allow_nonfinite(ck, stats));
    return vp_checkpoint_allow_nonfinite(ck, grad_norm);
}

vp_status vp_ckpt_read_counters(const vp_checkpoint* ck, int env_counters, vp_train_counters* c, int64_t* best_it,
                                double* best_sh) {
    memset(c, 0, sizeof *c);
    *best_it = -1;
    *best_sh = NAN;
    VP_TRY(vp_ckpt_meta_read_int(ck, "vulpes.iteration", &c->iteration));
    if (env_counters) {
        VP_TRY(vp_ckpt_meta_read_int(ck, "vulpes.collect_steps", &c->collect_steps));
        VP_TRY(vp_ckpt_meta_read_int(ck, "vulpes.env_steps", &c->env_steps));
    }
    VP_TRY(vp_ckpt_meta_read_int(ck, "vulpes.learner_steps", &c->learner_steps));
    VP_TRY(vp_ckpt_meta_read_int(ck, "vulpes.best_iteration", best_it));
    return vp_ckpt_meta_read_num(ck, "vulpes.best_val_sharpe", best_sh);
}
