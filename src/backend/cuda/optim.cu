/* CUDA optimiser ops: kernels, then launchers. */
#include "optim.cuh"
#include "reduce.cuh"

/* ---- kernels ------------------------------------------------------------------------------ */

/* One AdamW element (PyTorch semantics): decoupled decay, moments, bias correction, eps
 * after the corrected square root. */
__device__ __forceinline__ void adamw_one(float& p, float g, float& m, float& v, float lr, float b1, float b2,
                                          float eps, float wd, float step_size, float bc2_sqrt) {
    p *= 1.0f - lr * wd;
    m = b1 * m + (1.0f - b1) * g;
    v = b2 * v + (1.0f - b2) * g * g;
    p -= step_size * m / (sqrtf(v) / bc2_sqrt + eps);
}

/* param, grad, m, v [n]; step [1] i32, grad_scale [1] f32 or NULL, lr_p [1] f32 or NULL (then
 * lr_arg), all on the device. */
__global__ void adamw_kernel(float* p, const float* __restrict__ g, float* m, float* v, int64_t n,
                             const int32_t* __restrict__ step, const float* __restrict__ grad_scale,
                             const float* __restrict__ lr_p, float lr_arg, float b1, float b2, float eps, float wd,
                             int vec) {
    const float lr = lr_p ? lr_p[0] : lr_arg;
    /* bias corrections from the 1-based step, in double as PyTorch computes them */
    const double t = (double)step[0];
    const float scale = grad_scale ? grad_scale[0] : 1.0f;
    const float step_size = (float)((double)lr / (1.0 - pow((double)b1, t)));
    const float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, t));
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    for (int64_t i = i0; i < body; i += stride) {
        float4 pp = reinterpret_cast<float4*>(p)[i], gg = reinterpret_cast<const float4*>(g)[i];
        float4 mm = reinterpret_cast<float4*>(m)[i], vv = reinterpret_cast<float4*>(v)[i];
        adamw_one(pp.x, gg.x * scale, mm.x, vv.x, lr, b1, b2, eps, wd, step_size, bc2_sqrt);
        adamw_one(pp.y, gg.y * scale, mm.y, vv.y, lr, b1, b2, eps, wd, step_size, bc2_sqrt);
        adamw_one(pp.z, gg.z * scale, mm.z, vv.z, lr, b1, b2, eps, wd, step_size, bc2_sqrt);
        adamw_one(pp.w, gg.w * scale, mm.w, vv.w, lr, b1, b2, eps, wd, step_size, bc2_sqrt);
        reinterpret_cast<float4*>(p)[i] = pp;
        reinterpret_cast<float4*>(m)[i] = mm;
        reinterpret_cast<float4*>(v)[i] = vv;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride)
        adamw_one(p[i], g[i] * scale, m[i], v[i], lr, b1, b2, eps, wd, step_size, bc2_sqrt);
}

/* Held at INT32_MAX (the bias corrections are 1 long before), as on the CPU. */
__global__ void step_increment_kernel(int32_t* c) {
    if (c[0] < INT32_MAX) c[0] += 1;
}

/* ---- launchers ------------------------------------------------------------------------------ */

vp_status vp_cuda_adamw(vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr, vp_tensor* param,
                        const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                        const vp_tensor* grad_scale) {
    const int64_t n = vp_tensor_numel(param);
    VP_REQUIRE(vp_tensor_numel(grad) == n && vp_tensor_numel(m) == n && vp_tensor_numel(v) == n, VP_ERR_SHAPE,
               "cuda adamw: param, grad, m and v differ in size");
    const int vec = vp_cuda_aligned16(param->data, grad->data, m->data) && vp_cuda_aligned16(v->data, NULL, NULL);
    adamw_kernel<<<vp_cuda_grid(vec ? (n + 3) / 4 : n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_of(b)->stream>>>(
        (float*)param->data, (const float*)grad->data, (float*)m->data, (float*)v->data, n,
        (const int32_t*)step->data, grad_scale ? (const float*)grad_scale->data : NULL, lr ? (const float*)lr->data : NULL, cfg->lr, cfg->beta1,
        cfg->beta2, cfg->eps, cfg->weight_decay, vec);
    VP_CUDA_CHECK_LAUNCH("adamw_kernel");
    return VP_OK;
}

vp_status vp_cuda_step_increment(vp_backend* b, vp_tensor* counter) {
    step_increment_kernel<<<1, 1, 0, vp_cuda_of(b)->stream>>>((int32_t*)counter->data);
    VP_CUDA_CHECK_LAUNCH("step_increment_kernel");
    return VP_OK;
}

vp_status vp_cuda_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, const vp_tensor* max_norm_t,
                            vp_tensor* norm, vp_tensor* coef) {
    // a threshold in memory is read by the reduction's finishing kernel itself
    return vp_cuda_norm_and_clip(b, (const float*)x->data, vp_tensor_numel(x), max_norm,
                                 max_norm_t ? (const float*)max_norm_t->data : NULL, (float*)norm->data,
                                 (float*)coef->data);
}
