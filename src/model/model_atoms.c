/* The adaptive C51 support of the model (model_atoms.h): the configuration check, the
 * support of a parameter buffer, the Q reduction on it, and the CPU kernels. */
#include <string.h>

#include "model/atoms_math.h"
#include "model/model_atoms.h"
#include "model/model_internal.h"

/* ---- CPU kernels ---------------------------------------------------------------------------- */

vp_status vp_acpu_support(vp_backend* be, int nb, int Z, float v_min, float v_max, const float* s, float* support) {
    (void)be;
    for (int br = 0; br < nb; ++br) vp_atoms_support(s + br * (Z - 1), Z, v_min, v_max, support + br * Z);
    return VP_OK;
}

vp_status vp_acpu_q(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, const float* support, const float* logp,
                    float* q) {
    (void)be;
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    for (int64_t b = 0; b < B; ++b) {
        int a0 = 0;
        for (int k = 0; k < br->n; ++k) {
            // every head of branch k on the branch's own support
            for (int a = a0; a < a0 + br->size[k]; ++a)
                q[b * A + a] = vp_atoms_q(support + k * Z, logp + (b * A + a) * Z, Z);
            a0 += br->size[k];
        }
    }
    return VP_OK;
}

const vp_amops vp_amops_cpu = VP_KERNEL_TABLE(VP_AMOPS_KERNELS, vp_amops, vp_acpu);

/* ---- the model's side ------------------------------------------------------------------------- */

/* The table of m's backend. */
static vp_status amops_of(const vp_model* m, const vp_amops** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select("adaptive atoms", "adaptive-support kernels", m->backend, &vp_amops_cpu,
                                    VP_KERNELS_CUDA(vp_amops_cuda), &t);
    *out = (const vp_amops*)t;
    return s;
}

vp_status vp_model_atoms_check(const vp_model_cfg* c) {
    VP_REQUIRE(c->adaptive_atoms == 0 || c->adaptive_atoms == 1, VP_ERR_INVALID_ARG,
               "model config: adaptive_atoms = %d must be 0 or 1", c->adaptive_atoms);
    VP_REQUIRE(!(c->adaptive_atoms && c->q_denoise), VP_ERR_INVALID_ARG,
               "model config: adaptive atoms and q_denoise cannot be on together (the Q-denoise target reads the "
               "uniform support)");
    return VP_OK;
}

vp_status vp_model_atoms_support(const vp_model* m, const vp_tensor* params, vp_model_acts* a) {
    if (!m->cfg.adaptive_atoms) return VP_OK;
    const vp_amops* k = NULL;
    VP_TRY(amops_of(m, &k));
    const vp_model_cfg* c = &m->cfg;
    vp_tensor s = vp_model_slot(m, params, VP_PS_C51_ATOMS);
    return k->support(m->backend, c->n_branches, c->n_atoms, c->v_min, c->v_max, (const float*)s.data,
                      (float*)a->support.data);
}

vp_status vp_model_atoms_q(const vp_model* m, vp_model_acts* a, int64_t batch) {
    const vp_amops* k = NULL;
    VP_TRY(amops_of(m, &k));
    const vp_model_cfg* c = &m->cfg;
    vp_branch_map br = {c->n_branches, {0}};
    for (int i = 0; i < c->n_branches; ++i) br.size[i] = c->branch_sizes[i];
    return k->q(m->backend, batch, c->n_atoms, &br, (const float*)a->support.data, (const float*)a->logp.data,
                (float*)a->q.data);
}

vp_tensor vp_model_support(const vp_model_acts* a) {
    vp_tensor t;
    memset(&t, 0, sizeof t);
    if (!a || !a->model->cfg.adaptive_atoms || !(a->state & VP_ACTS_HEADS)) return t;
    return a->support;
}
