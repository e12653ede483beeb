/* vulpes: the whole public API in one include. */
#ifndef VULPES_VULPES_H
#define VULPES_VULPES_H

/* base: status codes, tensors, random numbers */
#include "vulpes/defs.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"
#include "vulpes/rng.h"

/* backends and ops */
#include "vulpes/backend.h"
#include "vulpes/ops.h"

/* data: bars, features, splits, synthetic markets */
#include "vulpes/data.h"
#include "vulpes/features.h"
#include "vulpes/split.h"
#include "vulpes/synth.h"

/* the environment, the agent and its learning */
#include "vulpes/env.h"
#include "vulpes/model.h"
#include "vulpes/replay.h"
#include "vulpes/learner.h"

/* configuration, run folders, metrics and reports */
#include "vulpes/config.h"
#include "vulpes/run.h"
#include "vulpes/metrics.h"
#include "vulpes/report.h"

/* The library's version, "MAJOR.MINOR.PATCH" (the CMake project version). */
#define VP_VERSION_STRING "0.1.0"

#endif /* VULPES_VULPES_H */
