/* Internal: the checks of a restored resume state (src/learn/dqn_check.c). */
#ifndef VP_LEARN_DQN_CHECK_H
#define VP_LEARN_DQN_CHECK_H

#include "vulpes/dqn.h"

/* Longest tensor name a checkpoint makes, NUL included. */
#define VP_DQN_NAME_MAX 96

/* The host counters `c` and the best validation (iteration best_it, Sharpe best_sh) read from
 * checkpoint `path`, against t's config: consistent with each other and free of overflow. */
vp_status vp_dqn_check_counters(const vp_trainer* t, const char* path, const vp_train_counters* c, int64_t best_it,
                                double best_sh);

/* Every tensor restored into t from `path` (counters on the device, parameters, target and
 * moments, the env state and the replay ring) against its invariants and the counters c. */
vp_status vp_dqn_check_restored(vp_trainer* t, const char* path, const vp_train_counters* c);

/* The restored state that the ranks of a data-parallel run share (the counters on the device,
 * the learner's state, parameters, target and moments): vp_dqn_check_restored without the env
 * state and the replay ring, which such a checkpoint does not hold. */
vp_status vp_dqn_check_shared(vp_trainer* t, const char* path, const vp_train_counters* c);

#endif /* VP_LEARN_DQN_CHECK_H */
