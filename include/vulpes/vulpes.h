/* vulpes: the whole public API in one include. */
#ifndef VULPES_VULPES_H
#define VULPES_VULPES_H

#include "vulpes/status.h"
#include "vulpes/tensor.h"
#include "vulpes/rng.h"
#include "vulpes/backend.h"
#include "vulpes/ops.h"
#include "vulpes/data.h"
#include "vulpes/features.h"
#include "vulpes/split.h"
#include "vulpes/synth.h"
#include "vulpes/env.h"
#include "vulpes/metrics.h"

#define VP_VERSION_STRING "0.1.0"

#endif /* VULPES_VULPES_H */
