/* vulpes: counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
 *
 * Stateless: the four words for (seed, stream, index) are a pure function, written
 * once here and used by the CPU and CUDA backends alike, so both draw identical
 * streams. A "stream" is one consumer (an env, a sampler); "index" counts its draws. */
#ifndef VULPES_RNG_H
#define VULPES_RNG_H

#include <stdint.h>

#include <math.h>

#include "vulpes/defs.h"

/* Four 32-bit random words. */
typedef struct vp_u32x4 {
    uint32_t v[4]; /* the words */
} vp_u32x4;

/* The 32x32 -> 64 bit product a * b: returns the low half and writes the high half to *hi. */
VP_HD uint32_t vp_mulhilo32(uint32_t a, uint32_t b, uint32_t* hi) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* Philox4x32 with 10 rounds on counter c and key (k0, k1). */
VP_HD vp_u32x4 vp_philox4x32_10(vp_u32x4 c, uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; ++r) {
        uint32_t hi0, hi1;
        uint32_t lo0 = vp_mulhilo32(0xD2511F53u, c.v[0], &hi0);
        uint32_t lo1 = vp_mulhilo32(0xCD9E8D57u, c.v[2], &hi1);
        vp_u32x4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

/* Four words for draw `index` of stream `stream` under a 64-bit seed. */
VP_HD vp_u32x4 vp_rng_draw(uint64_t seed, uint64_t stream, uint64_t index) {
    vp_u32x4 c;
    c.v[0] = (uint32_t)index;
    c.v[1] = (uint32_t)(index >> 32);
    c.v[2] = (uint32_t)stream;
    c.v[3] = (uint32_t)(stream >> 32);
    return vp_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* A word mapped to a float in [0, 1) with 24 bits of resolution. */
VP_HD float vp_u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* A word mapped to a float in (0, 1] (safe for log). */
VP_HD float vp_u32_to_unit_open0(uint32_t x) { return ((float)(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

/* One uniform float in [0, 1) for (seed, stream, index): the first word of the draw. */
VP_HD float vp_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return vp_u32_to_unit(vp_rng_draw(seed, stream, index).v[0]);
}

/* One standard normal for (seed, stream, index), by Box-Muller on the first two words. */
VP_HD float vp_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    vp_u32x4 r = vp_rng_draw(seed, stream, index);
    float u1 = vp_u32_to_unit_open0(r.v[0]);
    float u2 = vp_u32_to_unit(r.v[1]);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
}

#endif /* VULPES_RNG_H */
