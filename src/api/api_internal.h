/* Shared parts of the flat C API (vulpes/api.h): the backend a name asks for, and the status
 * an API function returns. */
#ifndef VP_API_INTERNAL_H
#define VP_API_INTERNAL_H

#include "vulpes/api.h"
#include "vulpes/backend.h"
#include "vulpes/status.h"

/* Creates the backend `name` asks for ("cpu", "cuda", "auto"; NULL: "auto") into *out; an
 * unknown name is VP_ERR_INVALID_ARG naming it and the choices. */
vp_status vp_api_backend(const char* name, vp_backend** out);

/* The config of the training run whose config YAML checkpoint `path` holds into *cfg (checked)
 * and its network's model configuration into *mc (F as the dataset computes it). */
struct vp_config;
struct vp_model_cfg;
vp_status vp_api_checkpoint_config(const char* path, struct vp_config* cfg, struct vp_model_cfg* mc);

#endif /* VP_API_INTERNAL_H */
