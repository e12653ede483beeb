/* The learner in a data-parallel run: the communicator attached at set-up, the gradient
 * summed over the ranks inside the step. */
#include "learn/learner_internal.h"

vp_status vp_learner_set_comm(vp_learner* l, vp_comm* comm) {
    const char* fn = "vp_learner_set_comm";
    VP_REQUIRE(l != NULL && l->scratch != NULL, VP_ERR_INVALID_ARG, "%s: learner is NULL or not initialised", fn);
    const int size = vp_comm_size(comm);
    if (comm && size > 1) {
        // modules whose state follows the batch's statistics would drift apart across the ranks
        VP_REQUIRE(!l->cfg.popart, VP_ERR_UNSUPPORTED,
                   "%s: PopArt (model.popart) keeps the running moments of each rank's own targets; it runs on one "
                   "rank only (%d ranks here)", fn, size);
        VP_REQUIRE(!vp_signals_bus_on(&l->cfg.signals), VP_ERR_UNSUPPORTED,
                   "%s: the signal bus (signals.*) and its rules read each rank's own batch; they run on one rank only "
                   "(%d ranks here)", fn, size);
        // every rank starts from rank 0's parameters
        VP_TRY(vp_comm_broadcast(comm, &l->model.params, 0));
        VP_TRY(vp_learner_sync_target(l));
    }
    l->comm = comm;
    return VP_OK;
}

vp_status vp_learner_allreduce_grads(vp_learner* l) {
    const int size = vp_comm_size(l->comm);
    if (!l->comm || size <= 1) return VP_OK;
    // the sum over the ranks of each rank's mean gradient, then the mean over the ranks
    VP_TRY(vp_comm_allreduce_sum(l->comm, &l->model.grads));
    return vp_axpby(l->backend, 1.0f / (float)size, &l->model.grads, 0.0f, &l->model.grads);
}
