/* XXH64 (Yann Collet's xxHash, 64-bit variant), used to fingerprint cached sources
 * and to checksum checkpoints. */
#include <string.h>

#include "data/hash.h"

static const uint64_t P1 = 11400714785074694791ULL;
static const uint64_t P2 = 14029467366897019727ULL;
static const uint64_t P3 = 1609587929392839161ULL;
static const uint64_t P4 = 9650029242287828579ULL;
static const uint64_t P5 = 2870177450012600261ULL;

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads (the byte order xxHash defines). */
static inline uint64_t load64(const unsigned char* p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline uint64_t load32(const unsigned char* p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t xxh_round(uint64_t acc, uint64_t input) {
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t xxh_merge(uint64_t acc, uint64_t val) {
    acc ^= xxh_round(0, val);
    return acc * P1 + P4;
}

uint64_t vp_hash64(const void* data, size_t len, uint64_t seed) {
    const unsigned char* p = (const unsigned char*)data;
    const unsigned char* end = p + len;
    uint64_t h;

    /* Four lanes over 32-byte stripes. */
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const unsigned char* limit = end - 32;
        do {
            v1 = xxh_round(v1, load64(p));
            v2 = xxh_round(v2, load64(p + 8));
            v3 = xxh_round(v3, load64(p + 16));
            v4 = xxh_round(v4, load64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)len;

    /* The tail: 8-byte words, one 4-byte word, single bytes. */
    for (; p + 8 <= end; p += 8) {
        h ^= xxh_round(0, load64(p));
        h = rotl64(h, 27) * P1 + P4;
    }
    if (p + 4 <= end) {
        h ^= load32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; ++p) {
        h ^= (uint64_t)(*p) * P5;
        h = rotl64(h, 11) * P1;
    }

    /* Avalanche. */
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}
