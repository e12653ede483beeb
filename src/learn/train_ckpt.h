/* Internal: what the algorithms' checkpoints share (src/learn/train_ckpt.c): a list of named
 * tensors, a list of metadata pairs with their text, reading an integer back, and the check
 * that a resume continues the same run (the config but for the keys a resume may change, and
 * the same training data). */
#ifndef VP_LEARN_TRAIN_CKPT_H
#define VP_LEARN_TRAIN_CKPT_H

#include "vulpes/checkpoint.h"
#include "vulpes/train.h"

/* Longest tensor name a checkpoint makes, NUL included. */
#define VP_CKPT_NAME_MAX 96

/* Metadata pairs a checkpoint writes at most. */
#define VP_CKPT_META_MAX (24 + VP_CKPT_DATA_KEYS)

/* A list of checkpoint items with their names in one block. */
typedef struct vp_ckpt_list {
    vp_ckpt_item* items;             /* [cap] */
    char (*names)[VP_CKPT_NAME_MAX]; /* [cap] */
    int n, cap;                      /* used, reserved */
} vp_ckpt_list;

/* An empty list for up to cap items (free with vp_ckpt_list_free, also after a failure). */
vp_status vp_ckpt_list_init(vp_ckpt_list* l, int cap);

/* Frees a list (a zeroed one is a no-op). */
void vp_ckpt_list_free(vp_ckpt_list* l);

/* Appends PREFIX + name -> tensor (dropped beyond cap). */
void vp_ckpt_list_add(vp_ckpt_list* l, const char* prefix, const char* name, vp_tensor t);

/* Metadata pairs of one save, with the text of the numbers. */
typedef struct vp_ckpt_meta_list {
    vp_ckpt_meta pairs[VP_CKPT_META_MAX]; /* [n] */
    char values[VP_CKPT_META_MAX][64];    /* [n] the numbers' text */
    int n;                                /* pairs used */
} vp_ckpt_meta_list;

/* Appends key = value (value not copied: it must outlive the save; dropped beyond the max). */
void vp_ckpt_meta_add(vp_ckpt_meta_list* ml, const char* key, const char* value);

/* Appends key = v in decimal. */
void vp_ckpt_meta_int(vp_ckpt_meta_list* ml, const char* key, int64_t v);

/* Appends key = v in decimal (unsigned). */
void vp_ckpt_meta_u64(vp_ckpt_meta_list* ml, const char* key, uint64_t v);

/* Appends key = v with 17 significant digits. */
void vp_ckpt_meta_num(vp_ckpt_meta_list* ml, const char* key, double v);

/* The pairs every checkpoint opens with, in this order: format, vulpes.kind, vulpes.algo
 * (when algo is not NULL; a file without it is DQN's), vulpes.version, vulpes.backend,
 * config (yaml, which must outlive the save), vulpes.iteration (c's for a resume, the best
 * one's otherwise), vulpes.warmup_steps (when `warmup`), the collect, env and learner step
 * counters of c, vulpes.best_val_sharpe and vulpes.best_iteration. */
void vp_ckpt_meta_head(vp_ckpt_meta_list* ml, vp_ckpt_kind kind, const char* algo, const vp_backend* b,
                       const char* yaml, const vp_train_counters* c, int warmup, double best_val_sharpe,
                       int64_t best_iteration);

/* The data record of d's training span as metadata pairs into *dm (appended to ml). */
vp_status vp_ckpt_meta_data(vp_ckpt_meta_list* ml, const vp_train_data* d, vp_ckpt_data_meta* dm);

/* Reads the int64 metadata value of `key` (VP_ERR_PARSE naming the file and key). */
vp_status vp_ckpt_meta_read_int(const vp_checkpoint* ck, const char* key, int64_t* out);

/* Reads the number metadata value of `key` into *out, NaN when the file has none (VP_ERR_PARSE
 * naming the file and key when it is not a number). */
vp_status vp_ckpt_meta_read_num(const vp_checkpoint* ck, const char* key, double* out);

/* Checks that checkpoint ck (read from path) is a resume checkpoint: vulpes.kind "resume", else
 * VP_ERR_PARSE "checkpoint PATH is not a resume checkpoint (vulpes.kind 'K'; last.safetensors is)". */
vp_status vp_ckpt_check_resume(const vp_checkpoint* ck, const char* path);

/* Checks that checkpoint ck continues the run of cfg on data d: its config equal to cfg but
 * for train.iterations, train.checkpoint_every, train.log_every and run.*, and the same
 * training bars; the message names the first key that differs. */
vp_status vp_ckpt_check_config(const vp_config* cfg, const vp_train_data* d, const vp_checkpoint* ck);

/* Host arrays for n envs' state in one block into *h (free h->cash). */
vp_status vp_ckpt_env_host(int64_t n, vp_env_state* h);

/* The env state restored into e (a resume's raw block): the env's own checks (vp_env_state_get,
 * then vp_env_state_set of the same bits), then each env's window a training episode
 * (episode_bars long, starting at or after the market's begin, t inside it); VP_ERR_PARSE
 * naming the tensor 'env.state'. On success h (from vp_ckpt_env_host) holds the state. */
vp_status vp_ckpt_check_env(vp_env* e, vp_env_state* h);

#endif /* VP_LEARN_TRAIN_CKPT_H */
