/* Internal: what the checkpoints of PPO, IQL and the Decision Transformer share on top of
 * src/learn/train_ckpt.h (src/learn/algo_ckpt.c): a network's parameter tensors by name, the
 * AdamW state, writing a save's list and pairs, reading a network's parameters back, and a
 * resume's counters. */
#ifndef VP_LEARN_ALGO_CKPT_H
#define VP_LEARN_ALGO_CKPT_H

#include "learn/train_ckpt.h"

/* A network's tensors: with names and views NULL, the count of its parameter tensors; else
 * the names and views into flat of the first cap of them, and the count. (The signature of
 * vp_ppo_net_tensors, vp_iql_net_tensors and vp_dt_net_tensors, net their network.) */
typedef int (*vp_ckpt_tensors_fn)(const void* net, const vp_tensor* flat, const char** names, vp_tensor* views,
                                  int cap);

/* One network as a checkpoint sees it. */
typedef struct vp_ckpt_net {
    const void* net;            /* the algorithm's network */
    vp_ckpt_tensors_fn tensors; /* its tensors' names and views */
} vp_ckpt_net;

/* The count of n's parameter tensors. */
int vp_ckpt_net_count(vp_ckpt_net n);

/* Appends every parameter tensor of flat (n's layout) as PREFIX + its name. */
vp_status vp_ckpt_add_net(vp_ckpt_list* l, vp_ckpt_net n, const char* prefix, const vp_tensor* flat);

/* Appends the AdamW state: m as "adam.m." + names, v as "adam.v." + names, then "adam.step". */
vp_status vp_ckpt_add_adam(vp_ckpt_list* l, vp_ckpt_net n, const vp_tensor* m, const vp_tensor* v, vp_tensor step);

/* A new list *l (zeroed first) of flat's parameter tensors by name: a best checkpoint's. */
vp_status vp_ckpt_net_list(vp_ckpt_list* l, vp_ckpt_net n, const vp_tensor* flat);

/* The start of a save by `who` (the function named in the messages): kind checked
 * (VP_ERR_INVALID_ARG "WHO: bad kind K"), b synced, cfg as yaml into *yaml (NULL first; to free,
 * which vp_ckpt_save_list does), and *ml zeroed and opened with vp_ckpt_meta_head (algo, c, no
 * warm-up counter, the best score). */
vp_status vp_ckpt_save_begin(vp_ckpt_meta_list* ml, char** yaml, const char* who, vp_backend* b, const vp_config* cfg,
                             vp_ckpt_kind kind, const char* algo, const vp_train_counters* c, double best_val_sharpe,
                             int64_t best_iteration);

/* The end of a save: when s (the status of building ml and l) is VP_OK, writes l's tensors and
 * ml's pairs to path; then frees l and yaml. Returns the first failure with "writing checkpoint
 * PATH" added. */
vp_status vp_ckpt_save_list(vp_backend* b, const char* path, vp_status s, vp_ckpt_list* l,
                            const vp_ckpt_meta_list* ml, char* yaml);

/* Opens checkpoint path into *ck, checked to hold vulpes.algo `algo`: else VP_ERR_PARSE
 * "checkpoint PATH holds no WHAT (vulpes.algo 'FOUND')" and nothing left open. */
vp_status vp_ckpt_open_algo(vp_checkpoint** ck, const char* path, const char* algo, const char* what);

/* Reads open checkpoint ck's parameter tensors of n by name into flat. */
vp_status vp_ckpt_read_net(vp_backend* b, const vp_checkpoint* ck, vp_ckpt_net n, vp_tensor* flat);

/* vp_ckpt_open_algo, vp_ckpt_read_net into flat, and the file closed. */
vp_status vp_ckpt_read_params(vp_backend* b, vp_ckpt_net n, const char* path, const char* algo, const char* what,
                              vp_tensor* flat);

/* What a resume reads before its tensors: the config and data checked (vp_ckpt_check_config),
 * then the tensors named stats and grad_norm allowed to hold non-finite values. */
vp_status vp_ckpt_resume_begin(vp_checkpoint* ck, const vp_config* cfg, const vp_train_data* d, const char* stats,
                               const char* grad_norm);

/* A resume's counters into *c (zeroed first), in this order: vulpes.iteration, when
 * `env_counters` vulpes.collect_steps and vulpes.env_steps, vulpes.learner_steps,
 * vulpes.best_iteration into *best_it (-1 first) and vulpes.best_val_sharpe into *best_sh (NaN
 * first, and when the file has none). */
vp_status vp_ckpt_read_counters(const vp_checkpoint* ck, int env_counters, vp_train_counters* c, int64_t* best_it,
                                double* best_sh);

#endif /* VP_LEARN_ALGO_CKPT_H */
