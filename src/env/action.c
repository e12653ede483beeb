/* The environment's action layout: the check a network's branches must pass. */
#include "vulpes/action.h"

vp_status vp_action_layout_check(const char* who, int n_branches, const int* sizes) {
    const vp_action_layout l = vp_action_layout_env();
    VP_REQUIRE(n_branches == l.n_branches, VP_ERR_INVALID_ARG, "%s: %d action branches, the environment has %d", who,
               n_branches, l.n_branches);
    VP_REQUIRE(sizes != NULL, VP_ERR_INVALID_ARG, "%s: branch sizes are NULL", who);
    for (int br = 0; br < l.n_branches; ++br)
        VP_REQUIRE(sizes[br] == l.size[br], VP_ERR_INVALID_ARG,
                   "%s: branch %d has %d choices, the environment's has %d", who, br, sizes[br], l.size[br]);
    return VP_OK;
}
