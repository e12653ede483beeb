/* Internal: what a training run checks and decides before it starts (train_checks.c). */
#ifndef VP_LEARN_TRAIN_CHECKS_H
#define VP_LEARN_TRAIN_CHECKS_H

#include "vulpes/train.h"

/* The run folder into dir[n]: the resume folder (o->run_dir), --out / run.out, or
 * runs/YYYYmmdd-HHMMSS-NAME (NAME run.name, else the config file's name). */
vp_status vp_train_pick_dir(const vp_config* cfg, const vp_train_opts* o, char* dir, size_t n);

/* A resume of `dir` needs DIR/last.safetensors: refused here only for a folder that is no run
 * at all (no config.yaml); in a run's folder the claim and the load name what is missing. */
vp_status vp_train_check_resumable(const char* dir);

/* Refuses prices, instrument and reward scales that no double or float carries (every learner
 * step would be NaN), naming the keys. */
vp_status vp_train_check_scales(const vp_config* cfg, const vp_train_data* d);

/* The key of the first switch of the DQN learner that is on (learn.adaptive_atoms, learn.popart,
 * learn.lr_schedule, curiosity.enabled, her.enabled, signals.*), NULL when none: the algorithms
 * without C51 support, replay or a DQN target refuse them. */
const char* vp_train_dqn_switch(const vp_config* cfg);

#endif /* VP_LEARN_TRAIN_CHECKS_H */
