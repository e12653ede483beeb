/* vulpes: portable qualifiers shared by C and CUDA code. */
#ifndef VULPES_DEFS_H
#define VULPES_DEFS_H

/* Marks a function usable from host C code and from CUDA device code. */
#if defined(__CUDACC__)
#define VP_HD __host__ __device__ __forceinline__
#else
#define VP_HD static inline
#endif

#endif /* VULPES_DEFS_H */
