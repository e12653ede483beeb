/* CUDA kernels of the model's fused head passes (mops.h: c51_head, port_add): the C51
 * combine (dueling, log-softmax over atoms, expected value) in one pass per sample, and the
 * portfolio projection added to the encoding in one element-wise pass. */
#include "backend/kit.h"
#include "model/cuda_mops.h"
#include "vulpes/ops.h"

#define STREAM(be) vp_cuda_stream_of(be)

/* The largest atom count of the one-pass combine: two atoms per lane of a warp. */
#define C51_HEAD_MAX_Z 64

/* ---- kernels ------------------------------------------------------------------------------ */

/* The largest branch count of a branch map (model/mops.h: vp_branch_map.size). */
#define C51_HEAD_MAX_BRANCHES 8

/* The combine of one (sample, branch) in one warp (c51_head_kernel): NA > 0 its size known when
 * compiled (the advantages held in registers, the actions unrolled), NA = 0 any size na. x: the
 * branch's first advantage row, o: its first log-probability row (NULL: not written), qb: its
 * first Q. */
template <int NA>
__device__ __forceinline__ void c51_branch(const float* __restrict__ x, float v0, float v1, int na, int Z, int lane,
                                           float v_min, float dz, float* o, float* qb) {
    const int z0 = lane, z1 = lane + 32;
    const int h0 = z0 < Z, h1 = z1 < Z;
    constexpr int R = NA > 0 ? NA : 1; // registers held per lane and slot
    float x0[R], x1[R];
    if (NA > 0) {
        na = NA;
#pragma unroll
        for (int a = 0; a < R; ++a) {
            x0[a] = h0 ? x[a * Z + z0] : 0.0f;
            x1[a] = h1 ? x[a * Z + z1] : 0.0f;
        }
    }
    float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
    for (int a = 0; a < (NA > 0 ? NA : na); ++a) {
        if (h0) s0 += NA > 0 ? x0[a] : x[a * Z + z0];
        if (h1) s1 += NA > 0 ? x1[a] : x[a * Z + z1];
    }
    const float mean0 = s0 / (float)na, mean1 = s1 / (float)na;
    const float base0 = v0 - mean0, base1 = v1 - mean1;
#pragma unroll
    for (int a = 0; a < (NA > 0 ? NA : na); ++a) {
        const float xa0 = NA > 0 ? x0[a] : (h0 ? x[a * Z + z0] : 0.0f);
        const float xa1 = NA > 0 ? x1[a] : (h1 ? x[a * Z + z1] : 0.0f);
        const float l0 = h0 ? xa0 + base0 : 0.0f;
        const float l1 = h1 ? xa1 + base1 : 0.0f;
        float mx = -INFINITY;
        if (h0) mx = vp_nan_max(mx, l0);
        if (h1) mx = vp_nan_max(mx, l1);
        mx = vp_warp_max(mx);
        float s = 0.0f;
        if (h0) s += expf(l0 - mx);
        if (h1) s += expf(l1 - mx);
        s = vp_warp_sum(s);
        const float ls = logf(s);
        const float p0 = l0 - mx - ls, p1 = l1 - mx - ls;
        float acc = 0.0f;
        if (h0) {
            if (o) o[a * Z + z0] = p0;
            acc += (v_min + (float)z0 * dz) * expf(p0);
        }
        if (h1) {
            if (o) o[a * Z + z1] = p1;
            acc += (v_min + (float)z1 * dz) * expf(p1);
        }
        acc = vp_warp_sum(acc);
        if (lane == 0) qb[a] = acc;
    }
}

/* One warp per (sample b, branch k): lane t holds atoms t and t + 32 (where < Z). The branch's
 * mean advantage per atom (dueling_kernel's sum in action order, then its division); per
 * action, the logit x + (v - mean), its log-softmax over atoms (softmax_kernel<32, 1>: lane
 * maxima and sums in atom order, then the warp's butterfly) and its expected value
 * (c51_q_kernel's lane sums and butterfly). Every expression is the unfused kernels' own, in
 * their order; the branches of a sample run in separate warps (more warps in flight). Branches
 * of 2, 3 and 4 actions (the default heads') take c51_branch's unrolled forms. logp NULL: Q
 * alone (the log-probabilities are not written). */
__global__ void c51_head_kernel(const float* __restrict__ v, int64_t ldv, const float* __restrict__ adv,
                                int64_t ldadv, float* logp, float* q, int64_t B, int Z, vp_branch_map br, int A,
                                float v_min, float dz) {
    const int wpb = blockDim.x / 32, lane = threadIdx.x & 31;
    const int z0 = lane, z1 = lane + 32;
    const int h0 = z0 < Z, h1 = z1 < Z;
    const int64_t tasks = B * br.n;
    for (int64_t w = (int64_t)blockIdx.x * wpb + threadIdx.x / 32; w < tasks; w += (int64_t)gridDim.x * wpb) {
        const int64_t b = w / br.n;
        const int k = (int)(w - b * br.n);
        // the branch's first action and size (constant indices: the map stays in parameters)
        int a0 = 0, na = 0;
#pragma unroll
        for (int j = 0; j < C51_HEAD_MAX_BRANCHES; ++j) {
            if (j < k) a0 += br.size[j];
            if (j == k) na = br.size[j];
        }
        const float* x = adv + b * ldadv + (int64_t)a0 * Z;
        float* o = logp ? logp + (b * A + a0) * Z : NULL;
        float* qb = q + b * A + a0;
        const float v0 = h0 ? v[b * ldv + z0] : 0.0f, v1 = h1 ? v[b * ldv + z1] : 0.0f;
        if (na == 3) c51_branch<3>(x, v0, v1, na, Z, lane, v_min, dz, o, qb);
        else if (na == 4) c51_branch<4>(x, v0, v1, na, Z, lane, v_min, dz, o, qb);
        else if (na == 2) c51_branch<2>(x, v0, v1, na, Z, lane, v_min, dz, o, qb);
        else c51_branch<0>(x, v0, v1, na, Z, lane, v_min, dz, o, qb);
    }
}

/* The output layers into their padded copies (mops.h c51_pad): one thread per copied float. */
__global__ void c51_pad_kernel(int Z, int AZ, int HH, const float* __restrict__ v2w, const float* __restrict__ v2b,
                               const float* __restrict__ a2w, const float* __restrict__ a2b, float* out) {
    const int64_t Zp = vp_pad4(Z), AZp = vp_pad4(AZ);
    const int64_t n1 = (int64_t)Z * HH, n2 = n1 + Z, n3 = n2 + (int64_t)AZ * HH, n4 = n3 + AZ;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        if (i < n1) out[i] = v2w[i];
        else if (i < n2) out[Zp * HH + (i - n1)] = v2b[i - n1];
        else if (i < n3) out[Zp * HH + Zp + (i - n2)] = a2w[i - n2];
        else out[Zp * HH + Zp + AZp * HH + (i - n3)] = a2b[i - n3];
    }
}

/* h[b, j] = e[b, j] + (bias[j] + sum_k p[b, k] W[j, k]): a thread per column j (its weight row
 * and bias in registers), blocks of `rows` rows (grid-stride); each row's p is read by every
 * thread of the block at the same address (a broadcast); each thread issues the loads of
 * PORT_GROUP rows before their stores (h may alias e, so a load after a store would wait for
 * it). PT > 0: P known when compiled (PT registers a row, the env's portfolio width); PT = 0:
 * any P <= PORT_MAX_P. The same sum in the same order either way. */
#define PORT_MAX_P 16
/* Rows whose loads a thread issues together. */
#define PORT_GROUP 4
template <int PT>
__global__ void port_add_kernel(const float* e, const float* __restrict__ p, const float* __restrict__ W,
                                const float* __restrict__ bias, float* h, int64_t B, int H, int P, int rows) {
    constexpr int R = PT > 0 ? PT : PORT_MAX_P;
    if (PT > 0) P = PT;
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j >= H) return;
    float w[R];
#pragma unroll
    for (int k = 0; k < R; ++k) w[k] = k < P ? W[(int64_t)j * P + k] : 0.0f;
    const float bj = bias[j];
    const int vec = P % 4 == 0 && (uintptr_t)p % 16 == 0;
    for (int64_t r0 = (int64_t)blockIdx.x * rows; r0 < B; r0 += (int64_t)gridDim.x * rows) {
        const int64_t r1 = r0 + rows < B ? r0 + rows : B;
        for (int64_t b0 = r0; b0 < r1; b0 += PORT_GROUP) {
            // a group's loads (e and p of each row) before its stores: h may alias e
            float pv[PORT_GROUP][R], ev[PORT_GROUP];
#pragma unroll
            for (int g = 0; g < PORT_GROUP; ++g) {
                const int64_t b = b0 + g < r1 ? b0 + g : r1 - 1;
                const float* pb = p + b * P;
                if (vec) {
                    // the row as float4 loads (P a multiple of 4, rows aligned)
#pragma unroll
                    for (int k = 0; k < R; k += 4)
                        if (k < P) {
                            const float4 q4 = *(const float4*)(pb + k);
                            pv[g][k] = q4.x, pv[g][k + 1] = q4.y, pv[g][k + 2] = q4.z, pv[g][k + 3] = q4.w;
                        } else {
                            pv[g][k] = pv[g][k + 1] = pv[g][k + 2] = pv[g][k + 3] = 0.0f;
                        }
                } else {
#pragma unroll
                    for (int k = 0; k < R; ++k) pv[g][k] = k < P ? pb[k] : 0.0f;
                }
                ev[g] = e[b * H + j];
            }
#pragma unroll
            for (int g = 0; g < PORT_GROUP; ++g) {
                float acc = bj;
#pragma unroll
                for (int k = 0; k < R; ++k)
                    if (k < P) acc = fmaf(pv[g][k], w[k], acc);
                if (b0 + g < r1) h[(b0 + g) * H + j] = ev[g] + acc;
            }
        }
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_cuda_c51_head(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, float v_min,
                                      float v_max, const float* v, int64_t ldv, const float* adv, int64_t ldadv,
                                      float* logp, float* q) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= C51_HEAD_MAX_BRANCHES && v && adv && q && B >= 1 && Z >= 2 &&
                   (logp || Z <= C51_HEAD_MAX_Z),
               VP_ERR_INVALID_ARG, "cuda c51_head: bad arguments");
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    VP_REQUIRE(ldv >= Z && ldadv >= (int64_t)A * Z, VP_ERR_INVALID_ARG,
               "cuda c51_head: rows of %lld and %lld floats, under Z %d and A Z %d", (long long)ldv, (long long)ldadv, Z,
               A * Z);
    if (Z > C51_HEAD_MAX_Z) {
        VP_REQUIRE(ldv == Z && ldadv == (int64_t)A * Z, VP_ERR_INVALID_ARG,
                   "cuda c51_head: padded rows need Z <= %d (Z is %d)", C51_HEAD_MAX_Z, Z);
        // the three kernels one after another
        VP_TRY(vp_cuda_dueling_forward(be, B, Z, br, v, adv, logp));
        vp_tensor lp = vp_tensor_2d(logp, VP_F32, VP_MEM_DEVICE, B * A, Z);
        VP_TRY(vp_log_softmax(be, &lp, &lp));
        return vp_cuda_c51_q(be, B * A, Z, v_min, v_max, logp, q);
    }
    const float dz = (v_max - v_min) / (float)(Z - 1);
    c51_head_kernel<<<vp_cuda_row_grid(B * br->n, VP_CUDA_THREADS / 32), VP_CUDA_THREADS, 0, STREAM(be)>>>(
        v, ldv, adv, ldadv, logp, q, B, Z, *br, A, v_min, dz);
    VP_CUDA_CHECK_LAUNCH("c51_head_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_c51_pad(vp_backend* be, int Z, int AZ, int HH, const float* v2w, const float* v2b,
                                     const float* a2w, const float* a2b, float* out) {
    VP_REQUIRE(Z >= 1 && AZ >= 1 && HH >= 1 && v2w && v2b && a2w && a2b && out, VP_ERR_INVALID_ARG,
               "cuda c51_pad: bad arguments");
    const int64_t n = (int64_t)(Z + AZ) * (HH + 1);
    c51_pad_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(Z, AZ, HH, v2w, v2b, a2w, a2b,
                                                                                        out);
    VP_CUDA_CHECK_LAUNCH("c51_pad_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_port_add(vp_backend* be, int64_t B, int H, int P, const float* e, const float* p,
                                      const float* W, const float* bias, float* h) {
    VP_REQUIRE(e && p && W && bias && h && B >= 1 && H >= 1 && P >= 1 && P <= PORT_MAX_P, VP_ERR_INVALID_ARG,
               "cuda port_add: bad arguments (P %d: 1 .. %d)", P, PORT_MAX_P);
    // a thread per column (blocks of up to 256 columns), up to 16 rows per block at a time: fewer
    // where the rows would make under 1024 blocks (about one wave; each block's rows run one
    // after another)
    const int64_t per = (B + 1023) / 1024;
    const int tx = H < 256 ? H : 256, rows = per < 16 ? (int)per : 16;
    const int64_t row_blocks = (B + rows - 1) / rows;
    const dim3 grid((unsigned)(row_blocks < 8192 ? row_blocks : 8192), (unsigned)((H + tx - 1) / tx));
    if (P == 8) port_add_kernel<8><<<grid, tx, 0, STREAM(be)>>>(e, p, W, bias, h, B, H, P, rows);
    else port_add_kernel<0><<<grid, tx, 0, STREAM(be)>>>(e, p, W, bias, h, B, H, P, rows);
    VP_CUDA_CHECK_LAUNCH("port_add_kernel");
    return VP_OK;
}
