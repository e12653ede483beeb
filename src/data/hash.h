/* XXH64, the 64-bit xxHash: a leaf function with no dependencies, shared by the data
 * layer's cache (source fingerprints) and the io layer's checkpoint checksums. */
#ifndef VP_DATA_HASH_H
#define VP_DATA_HASH_H

#include <stddef.h>
#include <stdint.h>

/* XXH64 of data[0, len) with a seed (the xxHash 64-bit algorithm). */
uint64_t vp_hash64(const void* data, size_t len, uint64_t seed);

#endif /* VP_DATA_HASH_H */
