/* vulpes: the whole public API in one include (every header of include/vulpes/). */
#ifndef VULPES_VULPES_H
#define VULPES_VULPES_H

/* base: version, status codes, tensors, random numbers */
#include "vulpes/version.h"
#include "vulpes/defs.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"
#include "vulpes/rng.h"

/* backends and ops */
#include "vulpes/backend.h"
#include "vulpes/ops.h"

/* configuration, run folders, metrics.jsonl, checkpoints */
#include "vulpes/config.h"
#include "vulpes/run.h"
#include "vulpes/checkpoint.h"

/* return metrics and trade statistics */
#include "vulpes/metrics.h"

/* data: bars, features, splits, synthetic markets, the dataset of a run */
#include "vulpes/data.h"
#include "vulpes/features.h"
#include "vulpes/split.h"
#include "vulpes/synth.h"
#include "vulpes/dataset.h"
#include "vulpes/data_record.h"
#include "vulpes/offline.h"
#include "vulpes/record.h"

/* the environment, the agent and its learning */
#include "vulpes/env.h"
#include "vulpes/action.h"
#include "vulpes/model.h"
#include "vulpes/model_span.h"
#include "vulpes/policy.h"
#include "vulpes/rollout.h"
#include "vulpes/replay.h"
#include "vulpes/signals.h"
#include "vulpes/learner.h"
#include "vulpes/collect.h"
#include "vulpes/curiosity.h"
#include "vulpes/algo.h"
#include "vulpes/dqn.h"
#include "vulpes/ppo.h"
#include "vulpes/iql.h"
#include "vulpes/dt.h"
#include "vulpes/train.h"

/* evaluation: backtests, walk-forward, reports */
#include "vulpes/backtest.h"
#include "vulpes/walkforward.h"
#include "vulpes/ablate.h"
#include "vulpes/search.h"
#include "vulpes/report.h"
#include "vulpes/api.h"
#include "vulpes/decision.h"

/* live decisions: a checkpoint fed bars one at a time */
#include "vulpes/live.h"

/* data-parallel runs: a rank's place, its communicator, the one-machine launcher */
#include "vulpes/dist.h"
#include "vulpes/comm.h"
#include "vulpes/launch.h"

#endif /* VULPES_VULPES_H */
