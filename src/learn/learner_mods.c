/* The learner modules of issue 16 (learner_mods.h): adaptive atom spacing and PopArt. */
#include <string.h>

#include "learn/learner_internal.h"

vp_status vp_learner_mods_init(vp_learner* l) {
    vp_learner_mods* md = &l->scratch->mods;
    const vp_learner_cfg* c = &l->cfg;
    const int64_t B = c->batch, nb = c->model.n_branches, Z = c->model.n_atoms;
    const int ad = c->model.adaptive_atoms, pa = c->popart;
    if (!ad && !pa) return VP_OK;
    const size_t bytes = (size_t)((ad ? B * nb + nb * Z : 0) + (pa ? VP_POPART_N : 0)) * 4 + 3 * 256;
    VP_TRY(vp_arena_init(&md->arena, l->backend, vp_backend_native_mem(l->backend), bytes));
    if (ad) {
        int64_t sr[2] = {B, nb}, sd[2] = {nb, Z - 1};
        VP_TRY(vp_arena_tensor(&md->arena, "atoms.resid", VP_F32, 2, sr, &md->resid, NULL));
        VP_TRY(vp_arena_tensor(&md->arena, "atoms.d_spacing", VP_F32, 2, sd, &md->d_spacing, NULL));
    }
    if (pa) {
        // mu 0, nu 1, sigma 1: the identity normalisation
        int64_t n = VP_POPART_N;
        const float init[VP_POPART_N] = {0.0f, 1.0f, 1.0f};
        VP_TRY(vp_arena_tensor(&md->arena, "popart", VP_F32, 1, &n, &l->popart, NULL));
        VP_TRY(vp_upload(l->backend, &l->popart, init, sizeof init));
    }
    return VP_OK;
}

void vp_learner_mods_free(vp_learner* l) {
    if (!l || !l->scratch) return;
    vp_arena_free(&l->scratch->mods.arena);
}

void vp_learner_mods_batch(vp_learner* l, vp_loss_batch* lb) {
    vp_learner_mods* md = &l->scratch->mods;
    if (l->cfg.model.adaptive_atoms) {
        md->support = vp_model_support(l->scratch->acts);
        md->target_support = vp_model_support(l->scratch->target_acts);
        lb->support = &md->support;
        lb->target_support = &md->target_support;
    }
    if (l->cfg.popart) lb->popart = &l->popart;
}

vp_status vp_learner_mods_loss(vp_learner* l, const vp_loss_batch* lb) {
    if (!l->cfg.model.adaptive_atoms) return VP_OK;
    vp_learner_scratch* s = l->scratch;
    const vp_param_info* p = vp_model_find_param(&l->model, "c51.atoms");
    VP_REQUIRE(p != NULL, VP_ERR_STATE, "adaptive atoms: the network has no parameter c51.atoms");
    vp_tensor lp = vp_model_log_probs(s->acts), tq = vp_model_q_c51(s->target_acts);
    vp_tensor sp = vp_model_param_view(&l->model, &l->model.params, p);
    return vp_loss_atoms_grad(l->backend, &s->dims, lb, &lp, &tq, &sp, &s->mods.resid, &s->mods.d_spacing);
}

vp_status vp_learner_mods_backward(vp_learner* l) {
    if (!l->cfg.model.adaptive_atoms) return VP_OK;
    const vp_param_info* p = vp_model_find_param(&l->model, "c51.atoms");
    VP_REQUIRE(p != NULL, VP_ERR_STATE, "adaptive atoms: the network has no parameter c51.atoms");
    vp_tensor g = vp_model_param_view(&l->model, &l->model.grads, p);
    return vp_copy(l->backend, &l->scratch->mods.d_spacing, &g);
}

vp_status vp_learner_mods_optim(vp_learner* l, const vp_batch* bt) {
    if (!l->cfg.popart) return VP_OK;
    vp_learner_scratch* s = l->scratch;
    vp_loss_batch lb = {&bt->actions, &s->a_star, &bt->reward, &bt->discount, &bt->is_weight, NULL, NULL, &l->popart};
    vp_tensor tq = vp_model_q_c51(s->target_acts);
    if (l->cfg.n_taus == 0)
        return vp_loss_popart(l->backend, &s->dims, &lb, &tq, l->cfg.popart_beta, NULL, NULL, NULL, NULL);
    // the IQN head's output layer, online and target
    const vp_param_info* pw = vp_model_find_param(&l->model, "iqn.l2.w");
    const vp_param_info* pb = vp_model_find_param(&l->model, "iqn.l2.b");
    VP_REQUIRE(pw != NULL && pb != NULL, VP_ERR_STATE, "PopArt: the network has no iqn.l2 output layer");
    vp_tensor w = vp_model_param_view(&l->model, &l->model.params, pw);
    vp_tensor b = vp_model_param_view(&l->model, &l->model.params, pb);
    vp_tensor tw = vp_model_param_view(&l->model, &l->target, pw);
    vp_tensor tb = vp_model_param_view(&l->model, &l->target, pb);
    return vp_loss_popart(l->backend, &s->dims, &lb, &tq, l->cfg.popart_beta, &w, &b, &tw, &tb);
}
