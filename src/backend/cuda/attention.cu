/* CUDA scaled dot-product attention: kernels, then launchers.
 *
 * Mapping. A CTA of ATTN_THREADS threads owns "thread rows" (the queries in the forward and
 * in the dq kernel, the keys in the dk/dv kernel) of one or more (sequence, head) groups.
 * TPR adjacent lanes share a row, each holding DC of its columns (D padded to a power of
 * two) in registers: float4 number part + TPR u of the row, so that the lanes of a row read
 * adjacent 16 bytes of shared memory. The other side (keys and values, or queries and the
 * output gradient) streams through shared memory in chunks of kc rows, read by every
 * thread row of the group at once (a broadcast). Short sequences pack several groups into
 * one CTA; long ones split a group's thread rows over several CTAs (tiles).
 *
 * Arithmetic. FP32 throughout. Logits are taken in base 2 (q or k pre-multiplied by
 * scale * log2(e)), so that each exponential is one exp2f. The forward keeps per row the
 * running maximum m, the running sum l and the output accumulator (online softmax),
 * rescaling them when m grows; it writes out = acc / l and lse = ln 2 (m + log2 l). The
 * backward recomputes P = exp2(s2 - lse log2(e)) from the saved lse, with
 * delta_i = dout_i . out_i and dS = P (dP - delta): dq_i = scale sum_j dS_ij k_j,
 * dk_j = scale sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i. Every output row is summed by its
 * own lanes in key (or query) order: no atomics, the same bits on every run. Nothing is
 * allocated and nothing synchronises with the host (graph-capturable). */
#include "attention.cuh"

/* Threads per CTA of the three kernels. */
#define ATTN_THREADS 128
/* Dynamic shared memory per CTA, under the 48 KiB that needs no opt-in. */
#define ATTN_SMEM_BYTES 48000
#define ATTN_LOG2E 1.4426950408889634f
#define ATTN_LN2 0.6931471805599453f

/* The problem as the kernels see it. */
typedef struct attn_shape {
    int64_t bh;   /* B * NH (sequence, head) groups */
    int heads;    /* NH */
    int lq, lk;   /* query and key positions */
    int dim;      /* D */
    int causal;   /* key j visible to query i only when j <= i */
    float scale;  /* logit scale */
    float scale2; /* scale * log2(e): logits in base 2 */
} attn_shape;

/* The launch geometry of one kernel. */
typedef struct attn_geo {
    int rg;       /* thread rows of one group in a CTA */
    int g;        /* groups per CTA */
    int tiles;    /* CTAs covering the thread rows of a block of g groups */
    int kc;       /* streamed rows per chunk */
    int gs;       /* floats between two groups' chunks in shared memory: kc * DP + 4 (4: bank shift) */
    int64_t nblk; /* CTAs in all */
    size_t smem;  /* dynamic shared memory bytes */
} attn_geo;

/* The tensors (NULL where a kernel does not use them). */
typedef struct attn_ptrs {
    const float *q, *k, *v;   /* [B, Lq | Lk, NH * D] */
    const float *out, *dout;  /* [B, Lq, NH * D] */
    float* o;                 /* forward: out */
    float* l;                 /* forward: lse [B, NH, Lq] */
    const float* lse;         /* backward: lse */
    float *dq, *dk, *dv;      /* backward: gradients */
} attn_ptrs;

/* ---- device helpers ------------------------------------------------------------------------------- */

/* Offset of (group bh, position p, column 0) in a [B, L, NH * D] tensor. */
__device__ __forceinline__ int64_t attn_row(const attn_shape& s, int64_t bh, int L, int p) {
    const int64_t b = bh / s.heads;
    const int h = (int)(bh - b * s.heads);
    return ((b * L + p) * s.heads + h) * (int64_t)s.dim;
}

/* r = mul * this lane's columns of row src (column 4 (part + TPR u) + e), zero past D. */
template <int DC, int TPR>
__device__ __forceinline__ void attn_load_row(float4* r, const float* src, int dim, int part, float mul) {
#pragma unroll
    for (int u = 0; u < DC / 4; ++u) {
        const int c = 4 * (part + TPR * u);
        r[u].x = c < dim ? mul * src[c] : 0.0f;
        r[u].y = c + 1 < dim ? mul * src[c + 1] : 0.0f;
        r[u].z = c + 2 < dim ? mul * src[c + 2] : 0.0f;
        r[u].w = c + 3 < dim ? mul * src[c + 3] : 0.0f;
    }
}

/* dst = mul * r for this lane's columns below D. */
template <int DC, int TPR>
__device__ __forceinline__ void attn_store_row(float* dst, const float4* r, int dim, int part, float mul) {
#pragma unroll
    for (int u = 0; u < DC / 4; ++u) {
        const int c = 4 * (part + TPR * u);
        if (c < dim) dst[c] = mul * r[u].x;
        if (c + 1 < dim) dst[c + 1] = mul * r[u].y;
        if (c + 2 < dim) dst[c + 2] = mul * r[u].z;
        if (c + 3 < dim) dst[c + 3] = mul * r[u].w;
    }
}

/* r . (shared row sr), this lane's columns, then summed over the TPR lanes of the row
 * (`mask`: those lanes) in a fixed butterfly order. */
template <int DC, int TPR>
__device__ __forceinline__ float attn_dot(const float4* r, const float4* sr, int part, unsigned mask) {
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < DC / 4; ++u) {
        const float4 x = sr[part + TPR * u];
        s = fmaf(r[u].x, x.x, s);
        s = fmaf(r[u].y, x.y, s);
        s = fmaf(r[u].z, x.z, s);
        s = fmaf(r[u].w, x.w, s);
    }
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) s += __shfl_xor_sync(mask, s, o);
    return s;
}

/* acc += w * (shared row sr), this lane's columns. */
template <int DC, int TPR>
__device__ __forceinline__ void attn_axpy(float4* acc, float w, const float4* sr, int part) {
#pragma unroll
    for (int u = 0; u < DC / 4; ++u) {
        const float4 x = sr[part + TPR * u];
        acc[u].x = fmaf(w, x.x, acc[u].x);
        acc[u].y = fmaf(w, x.y, acc[u].y);
        acc[u].z = fmaf(w, x.z, acc[u].z);
        acc[u].w = fmaf(w, x.w, acc[u].w);
    }
}

/* acc *= w, this lane's columns. */
template <int DC>
__device__ __forceinline__ void attn_scale(float4* acc, float w) {
#pragma unroll
    for (int u = 0; u < DC / 4; ++u) {
        acc[u].x *= w;
        acc[u].y *= w;
        acc[u].z *= w;
        acc[u].w *= w;
    }
}

/* Fills a shared chunk (geo.g groups of geo.kc rows of DP floats, geo.gs floats apart) with
 * rows p0 .. p0 + kc - 1 of groups bh0 .. of src [B, L, NH * D]; zeros past L, D or the
 * last group. Every thread of the CTA takes part. */
template <int DP>
__device__ void attn_load_chunk(float* dst, const float* src, const attn_shape& s, const attn_geo& geo, int64_t bh0,
                                int L, int p0) {
    const int per = geo.kc * DP;
    const int64_t stride = (int64_t)s.heads * s.dim; /* elements between positions */
    for (int gg = 0; gg < geo.g; ++gg) {
        const int64_t bh = bh0 + gg;
        const float* row0 = bh < s.bh ? src + attn_row(s, bh, L, 0) : src;
        float* out = dst + gg * geo.gs;
        for (int idx = threadIdx.x; idx < per; idx += blockDim.x) {
            const int jj = idx / DP, c = idx % DP, p = p0 + jj; /* DP is a power of two: shifts */
            out[idx] = (bh < s.bh && p < L && c < s.dim) ? row0[(int64_t)p * stride + c] : 0.0f;
        }
    }
}

/* Where a thread sits: group gi of the CTA, row r of the group's tile, lane part of the
 * row, and the mask of the row's TPR lanes. */
typedef struct attn_slot {
    int gi, r, part;
    unsigned mask;
} attn_slot;

template <int TPR>
__device__ __forceinline__ attn_slot attn_slot_of(const attn_geo& geo) {
    attn_slot t;
    const int rl = threadIdx.x / TPR, lane = threadIdx.x & 31;
    t.part = threadIdx.x % TPR;
    t.gi = rl / geo.rg;
    t.r = rl - t.gi * geo.rg;
    t.mask = TPR == 32 ? 0xffffffffu : (((1u << TPR) - 1u) << (lane & ~(TPR - 1)));
    return t;
}

/* ---- kernels ---------------------------------------------------------------------------------------- */

/* Forward: thread rows are queries, K and V stream through shared memory. */
template <int DC, int TPR>
__global__ void __launch_bounds__(ATTN_THREADS) attn_fwd_kernel(attn_ptrs a, attn_shape s, attn_geo geo) {
    constexpr int DP = DC * TPR, NV = DC / 4;
    extern __shared__ float4 attn_smem[];
    float* ks = (float*)attn_smem; /* [g][kc][DP] keys, groups gs apart */
    float* vs = ks + geo.g * geo.gs; /* [g][kc][DP] values */
    const attn_slot t = attn_slot_of<TPR>(geo);
    for (int64_t blk = blockIdx.x; blk < geo.nblk; blk += gridDim.x) {
        const int64_t bh0 = (blk / geo.tiles) * geo.g, bh = bh0 + t.gi;
        const int tile = (int)(blk % geo.tiles), i = tile * geo.rg + t.r;
        const bool live = t.gi < geo.g && bh < s.bh && i < s.lq;
        float4 qr[NV], acc[NV];
        float m = -INFINITY, l = 0.0f;
        for (int u = 0; u < NV; ++u) qr[u] = acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (live) attn_load_row<DC, TPR>(qr, a.q + attn_row(s, bh, s.lq, i), s.dim, t.part, s.scale2);
        /* keys any row of the tile sees, and keys this row sees */
        const int kend = s.causal ? min(s.lk, (tile + 1) * geo.rg) : s.lk;
        const int jend = s.causal ? i + 1 : s.lk;
        for (int j0 = 0; j0 < kend; j0 += geo.kc) {
            __syncthreads(); /* the previous chunk is consumed */
            attn_load_chunk<DP>(ks, a.k, s, geo, bh0, s.lk, j0);
            attn_load_chunk<DP>(vs, a.v, s, geo, bh0, s.lk, j0);
            __syncthreads();
            if (!live) continue;
            const float4* kg = (const float4*)(ks + t.gi * geo.gs);
            const float4* vg = (const float4*)(vs + t.gi * geo.gs);
            const int jn = min(geo.kc, jend - j0);
            for (int jj = 0; jj < jn; ++jj) {
                /* online softmax: rescale when the maximum grows */
                const float sc = attn_dot<DC, TPR>(qr, kg + jj * (DP / 4), t.part, t.mask);
                if (sc > m) {
                    const float corr = exp2f(m - sc);
                    l *= corr;
                    attn_scale<DC>(acc, corr);
                    m = sc;
                }
                const float p = exp2f(sc - m);
                l += p;
                attn_axpy<DC, TPR>(acc, p, vg + jj * (DP / 4), t.part);
            }
        }
        if (live) {
            attn_store_row<DC, TPR>(a.o + attn_row(s, bh, s.lq, i), acc, s.dim, t.part, 1.0f / l);
            if (t.part == 0) a.l[bh * s.lq + i] = ATTN_LN2 * (m + log2f(l));
        }
    }
}

/* Backward, dq: thread rows are queries, K and V stream through shared memory. */
template <int DC, int TPR>
__global__ void __launch_bounds__(ATTN_THREADS) attn_dq_kernel(attn_ptrs a, attn_shape s, attn_geo geo) {
    constexpr int DP = DC * TPR, NV = DC / 4;
    extern __shared__ float4 attn_smem[];
    float* ks = (float*)attn_smem;
    float* vs = ks + geo.g * geo.gs;
    const attn_slot t = attn_slot_of<TPR>(geo);
    for (int64_t blk = blockIdx.x; blk < geo.nblk; blk += gridDim.x) {
        const int64_t bh0 = (blk / geo.tiles) * geo.g, bh = bh0 + t.gi;
        const int tile = (int)(blk % geo.tiles), i = tile * geo.rg + t.r;
        const bool live = t.gi < geo.g && bh < s.bh && i < s.lq;
        float4 qr[NV], gr[NV], acc[NV];
        float delta = 0.0f, lse2 = 0.0f;
        for (int u = 0; u < NV; ++u) qr[u] = gr[u] = acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (live) {
            /* q in base-2 logit units, dout, delta = dout . out and lse in base 2 */
            const int64_t o = attn_row(s, bh, s.lq, i);
            attn_load_row<DC, TPR>(qr, a.q + o, s.dim, t.part, s.scale2);
            attn_load_row<DC, TPR>(gr, a.dout + o, s.dim, t.part, 1.0f);
            attn_load_row<DC, TPR>(acc, a.out + o, s.dim, t.part, 1.0f);
            for (int u = 0; u < NV; ++u)
                delta += gr[u].x * acc[u].x + gr[u].y * acc[u].y + gr[u].z * acc[u].z + gr[u].w * acc[u].w;
            for (int w = TPR / 2; w > 0; w >>= 1) delta += __shfl_xor_sync(t.mask, delta, w);
            for (int u = 0; u < NV; ++u) acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            lse2 = a.lse[bh * s.lq + i] * ATTN_LOG2E;
        }
        const int kend = s.causal ? min(s.lk, (tile + 1) * geo.rg) : s.lk;
        const int jend = s.causal ? i + 1 : s.lk;
        for (int j0 = 0; j0 < kend; j0 += geo.kc) {
            __syncthreads();
            attn_load_chunk<DP>(ks, a.k, s, geo, bh0, s.lk, j0);
            attn_load_chunk<DP>(vs, a.v, s, geo, bh0, s.lk, j0);
            __syncthreads();
            if (!live) continue;
            const float4* kg = (const float4*)(ks + t.gi * geo.gs);
            const float4* vg = (const float4*)(vs + t.gi * geo.gs);
            const int jn = min(geo.kc, jend - j0);
            for (int jj = 0; jj < jn; ++jj) {
                /* P from lse, dP = dout . v, dS = P (dP - delta), dq += dS k */
                const float4 *kr = kg + jj * (DP / 4), *vr = vg + jj * (DP / 4);
                const float p = exp2f(attn_dot<DC, TPR>(qr, kr, t.part, t.mask) - lse2);
                const float ds = p * (attn_dot<DC, TPR>(gr, vr, t.part, t.mask) - delta);
                attn_axpy<DC, TPR>(acc, ds, kr, t.part);
            }
        }
        if (live) attn_store_row<DC, TPR>(a.dq + attn_row(s, bh, s.lq, i), acc, s.dim, t.part, s.scale);
    }
}

/* Backward, dk and dv: thread rows are keys; Q, dout, lse and delta stream through shared
 * memory (delta of each streamed query from dout in shared memory and out in global). */
template <int DC, int TPR>
__global__ void __launch_bounds__(ATTN_THREADS) attn_dkv_kernel(attn_ptrs a, attn_shape s, attn_geo geo) {
    constexpr int DP = DC * TPR, NV = DC / 4;
    extern __shared__ float4 attn_smem[];
    float* qs = (float*)attn_smem;      /* [g][kc][DP] queries */
    float* os = qs + geo.g * geo.gs;    /* [g][kc][DP] output gradients */
    float* ls = os + geo.g * geo.gs;    /* [g][kc] lse in base 2 */
    float* dl = ls + geo.g * geo.kc;    /* [g][kc] delta */
    const attn_slot t = attn_slot_of<TPR>(geo);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int64_t blk = blockIdx.x; blk < geo.nblk; blk += gridDim.x) {
        const int64_t bh0 = (blk / geo.tiles) * geo.g, bh = bh0 + t.gi;
        const int tile = (int)(blk % geo.tiles), j = tile * geo.rg + t.r;
        const bool live = t.gi < geo.g && bh < s.bh && j < s.lk;
        float4 kr[NV], vr[NV], dk[NV], dv[NV];
        for (int u = 0; u < NV; ++u) kr[u] = vr[u] = dk[u] = dv[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (live) {
            const int64_t o = attn_row(s, bh, s.lk, j);
            attn_load_row<DC, TPR>(kr, a.k + o, s.dim, t.part, s.scale2);
            attn_load_row<DC, TPR>(vr, a.v + o, s.dim, t.part, 1.0f);
        }
        /* the first query that sees a key of this tile */
        const int istart = s.causal ? tile * geo.rg : 0;
        for (int i0 = istart; i0 < s.lq; i0 += geo.kc) {
            __syncthreads();
            attn_load_chunk<DP>(qs, a.q, s, geo, bh0, s.lq, i0);
            attn_load_chunk<DP>(os, a.dout, s, geo, bh0, s.lq, i0);
            for (int idx = threadIdx.x; idx < geo.g * geo.kc; idx += blockDim.x) {
                const int gg = idx / geo.kc, i = i0 + (idx - gg * geo.kc);
                const int64_t b2 = bh0 + gg;
                ls[idx] = (b2 < s.bh && i < s.lq) ? a.lse[b2 * s.lq + i] * ATTN_LOG2E : 0.0f;
            }
            __syncthreads();
            /* delta_i = dout_i . out_i, a warp per streamed row, lanes over columns */
            for (int row = warp; row < geo.g * geo.kc; row += nwarps) {
                const int gg = row / geo.kc, ii = row - gg * geo.kc, i = i0 + ii;
                const int64_t b2 = bh0 + gg;
                float sum = 0.0f;
                if (b2 < s.bh && i < s.lq) {
                    const float* orow = a.out + attn_row(s, b2, s.lq, i);
                    const float* grow = os + gg * geo.gs + ii * DP;
                    for (int c = lane; c < s.dim; c += 32) sum = fmaf(grow[c], orow[c], sum);
                }
                sum = vp_warp_sum(sum);
                if (lane == 0) dl[row] = sum;
            }
            __syncthreads();
            if (!live) continue;
            const float4* qg = (const float4*)(qs + t.gi * geo.gs);
            const float4* og = (const float4*)(os + t.gi * geo.gs);
            const float* lg = ls + t.gi * geo.kc;
            const float* dg = dl + t.gi * geo.kc;
            const int ib = s.causal ? max(0, j - i0) : 0, in = min(geo.kc, s.lq - i0);
            for (int ii = ib; ii < in; ++ii) {
                /* P from lse, dv += P dout, dS = P (v . dout - delta), dk += dS q */
                const float4 *qrow = qg + ii * (DP / 4), *grow = og + ii * (DP / 4);
                const float p = exp2f(attn_dot<DC, TPR>(kr, qrow, t.part, t.mask) - lg[ii]);
                attn_axpy<DC, TPR>(dv, p, grow, t.part);
                const float ds = p * (attn_dot<DC, TPR>(vr, grow, t.part, t.mask) - dg[ii]);
                attn_axpy<DC, TPR>(dk, ds, qrow, t.part);
            }
        }
        if (live) {
            const int64_t o = attn_row(s, bh, s.lk, j);
            attn_store_row<DC, TPR>(a.dk + o, dk, s.dim, t.part, s.scale);
            attn_store_row<DC, TPR>(a.dv + o, dv, s.dim, t.part, 1.0f);
        }
    }
}

/* ---- launchers -------------------------------------------------------------------------------------- */

enum { ATTN_FWD = 0, ATTN_DQ, ATTN_DKV };

static attn_shape attn_shape_of(const vp_attn_desc* d) {
    attn_shape s;
    s.bh = d->batch * d->heads;
    s.heads = d->heads;
    s.lq = d->lq;
    s.lk = d->lk;
    s.dim = d->dim;
    s.causal = d->causal;
    s.scale = d->scale;
    s.scale2 = d->scale * ATTN_LOG2E;
    return s;
}

/* The columns per lane (dc) and lanes per row (tpr) of a kernel: D padded to a power of two
 * (at least 4) on one lane while it fits dc_max, else dc_max on each of tpr lanes. */
static void attn_split(int dim, int dc_max, int* dc, int* tpr) {
    int p = 4;
    while (p < dim) p <<= 1;
    *dc = p <= dc_max ? p : dc_max;
    *tpr = p <= dc_max ? 1 : p / dc_max;
}

/* Geometry for `rows` thread rows and `cols` streamed rows per group over bh groups: the
 * shared memory holds n_tiles [g][kc][dp] chunks (+4 floats per group) and `extra` floats
 * per streamed row and group. Groups are packed while the rows leave threads idle and the
 * chunks fit; the chunk then takes what shared memory is left. */
static attn_geo attn_geo_make(int rows, int cols, int tpr, int dp, int64_t bh, int n_tiles, int extra) {
    attn_geo g;
    const int per_cta = ATTN_THREADS / tpr, budget = ATTN_SMEM_BYTES / (int)sizeof(float);
    const int kc0 = cols < 32 ? cols : 32;
    g.rg = rows < per_cta ? rows : per_cta;
    int groups = per_cta / g.rg;
    const int gmax = budget / (n_tiles * (kc0 * dp + 4) + extra * kc0);
    if (groups > gmax) groups = gmax;
    if ((int64_t)groups > bh) groups = (int)bh;
    g.g = groups < 1 ? 1 : groups;
    int kc = (budget / g.g - 4 * n_tiles) / (n_tiles * dp + extra);
    g.kc = kc < cols ? kc : cols;
    g.gs = g.kc * dp + 4;
    g.tiles = (rows + g.rg - 1) / g.rg;
    g.nblk = (bh + g.g - 1) / g.g * g.tiles;
    g.smem = sizeof(float) * ((size_t)n_tiles * g.g * g.gs + (size_t)extra * g.g * g.kc);
    return g;
}

/* Launches kernel KIND with DC columns on each of TPR lanes. */
template <int KIND, int DC, int TPR>
static void attn_launch_one(const attn_ptrs& a, const attn_shape& s, const attn_geo& geo, cudaStream_t st) {
    const unsigned grid = (unsigned)(geo.nblk < (1 << 30) ? geo.nblk : (1 << 30));
    if constexpr (KIND == ATTN_FWD) attn_fwd_kernel<DC, TPR><<<grid, ATTN_THREADS, geo.smem, st>>>(a, s, geo);
    else if constexpr (KIND == ATTN_DQ) attn_dq_kernel<DC, TPR><<<grid, ATTN_THREADS, geo.smem, st>>>(a, s, geo);
    else attn_dkv_kernel<DC, TPR><<<grid, ATTN_THREADS, geo.smem, st>>>(a, s, geo);
}

/* Launches kernel KIND for (dc, tpr) as attn_split(dim, DCMAX) gives them: dc 4, 8, 16 (and
 * 32 when DCMAX is 32) on one lane, or DCMAX on 2 .. 128 / DCMAX lanes. */
template <int KIND, int DCMAX>
static vp_status attn_launch(int dc, int tpr, const attn_ptrs& a, const attn_shape& s, const attn_geo& geo,
                             cudaStream_t st) {
    if (tpr == 1 && dc == 4) attn_launch_one<KIND, 4, 1>(a, s, geo, st);
    else if (tpr == 1 && dc == 8) attn_launch_one<KIND, 8, 1>(a, s, geo, st);
    else if (tpr == 1 && dc == 16) attn_launch_one<KIND, 16, 1>(a, s, geo, st);
    else if (tpr == 1 && dc == DCMAX) attn_launch_one<KIND, DCMAX, 1>(a, s, geo, st);
    else if (tpr == 2 && dc == DCMAX) attn_launch_one<KIND, DCMAX, 2>(a, s, geo, st);
    else if (tpr == 4 && dc == DCMAX) attn_launch_one<KIND, DCMAX, 4>(a, s, geo, st);
    else if constexpr (DCMAX * 8 <= VP_ATTN_MAX_DIM) {
        if (tpr == 8 && dc == DCMAX) attn_launch_one<KIND, DCMAX, 8>(a, s, geo, st);
        else VP_FAIL(VP_ERR_UNSUPPORTED, "cuda attention: no kernel for %d columns on %d lanes", dc, tpr);
    } else {
        VP_FAIL(VP_ERR_UNSUPPORTED, "cuda attention: no kernel for %d columns on %d lanes", dc, tpr);
    }
    return VP_OK;
}

vp_status vp_cuda_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                            const vp_tensor* v, vp_tensor* out, vp_tensor* lse) {
    attn_ptrs a;
    memset(&a, 0, sizeof a);
    a.q = (const float*)q->data;
    a.k = (const float*)k->data;
    a.v = (const float*)v->data;
    a.o = (float*)out->data;
    a.l = (float*)lse->data;
    const attn_shape s = attn_shape_of(d);
    int dc, tpr;
    attn_split(d->dim, 32, &dc, &tpr);
    const attn_geo geo = attn_geo_make(d->lq, d->lk, tpr, dc * tpr, s.bh, 2, 0);
    VP_TRY((attn_launch<ATTN_FWD, 32>(dc, tpr, a, s, geo, vp_cuda_of(b)->stream)));
    VP_CUDA_CHECK_LAUNCH("attn_fwd_kernel");
    return VP_OK;
}

vp_status vp_cuda_attention_backward(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                                     const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse,
                                     const vp_tensor* dout, vp_tensor* dq, vp_tensor* dk, vp_tensor* dv) {
    attn_ptrs a;
    memset(&a, 0, sizeof a);
    a.q = (const float*)q->data;
    a.k = (const float*)k->data;
    a.v = (const float*)v->data;
    a.out = (const float*)out->data;
    a.dout = (const float*)dout->data;
    a.lse = (const float*)lse->data;
    a.dq = (float*)dq->data;
    a.dk = (float*)dk->data;
    a.dv = (float*)dv->data;
    const attn_shape s = attn_shape_of(d);
    cudaStream_t st = vp_cuda_of(b)->stream;
    /* dq: queries on the threads (3 register rows: dc_max 32) */
    int dc, tpr;
    attn_split(d->dim, 32, &dc, &tpr);
    const attn_geo gq = attn_geo_make(d->lq, d->lk, tpr, dc * tpr, s.bh, 2, 0);
    VP_TRY((attn_launch<ATTN_DQ, 32>(dc, tpr, a, s, gq, st)));
    VP_CUDA_CHECK_LAUNCH("attn_dq_kernel");
    /* dk, dv: keys on the threads (4 register rows: dc_max 16), lse and delta per query */
    attn_split(d->dim, 16, &dc, &tpr);
    const attn_geo gk = attn_geo_make(d->lk, d->lq, tpr, dc * tpr, s.bh, 2, 2);
    VP_TRY((attn_launch<ATTN_DKV, 16>(dc, tpr, a, s, gk, st)));
    VP_CUDA_CHECK_LAUNCH("attn_dkv_kernel");
    return VP_OK;
}
