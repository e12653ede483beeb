/* CPU kernels of the spectral normalisation (inops.h): one power iteration and the
 * gradient through W / sigma. */
#include <math.h>

#include "model/inops.h"

/* normalize's floor on the norm (PyTorch's spectral_norm eps). */
#define SN_EPS 1e-12f

vp_status vp_cpu_sn_forward(vp_backend* be, int64_t rows, int64_t cols, const float* W, const float* u0, float* u,
                            float* v, float* sigma, float* w_sn) {
    (void)be;
    // v = normalize(W^T u0)
    float nv = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        float acc = 0.0f;
        for (int64_t i = 0; i < rows; ++i) acc += W[i * cols + j] * u0[i];
        v[j] = acc;
        nv += acc * acc;
    }
    nv = fmaxf(sqrtf(nv), SN_EPS);
    for (int64_t j = 0; j < cols; ++j) v[j] /= nv;
    // t = W v, u = normalize(t), sigma = u . t
    float nu = 0.0f;
    for (int64_t i = 0; i < rows; ++i) {
        float acc = 0.0f;
        for (int64_t j = 0; j < cols; ++j) acc += W[i * cols + j] * v[j];
        u[i] = acc;
        nu += acc * acc;
    }
    nu = fmaxf(sqrtf(nu), SN_EPS);
    float s = 0.0f;
    for (int64_t i = 0; i < rows; ++i) {
        const float t = u[i];
        u[i] = t / nu;
        s += u[i] * t;
    }
    *sigma = s;
    for (int64_t i = 0; i < rows * cols; ++i) w_sn[i] = W[i] / s;
    return VP_OK;
}

vp_status vp_cpu_sn_backward(vp_backend* be, int64_t rows, int64_t cols, const float* W, const float* u,
                             const float* v, const float* sigma, float* g) {
    (void)be;
    const float s = *sigma;
    float c = 0.0f;
    for (int64_t i = 0; i < rows * cols; ++i) c += g[i] * W[i];
    const float k = c / (s * s);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) g[i * cols + j] = g[i * cols + j] / s - k * u[i] * v[j];
    return VP_OK;
}
