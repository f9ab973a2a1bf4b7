// LLMRDZV_UNROLL before a loop of a fixed trip count in a CUDA kernel: nvcc unrolls it fully, so
// that per-thread arrays indexed by its counter stay in registers. Empty elsewhere (a CPU
// emulation of the kernel compiles the same source with a host compiler, which would warn about
// the unknown pragma).
#pragma once

#if defined(__CUDACC__)
#define LLMRDZV_UNROLL _Pragma("unroll")
#else
#define LLMRDZV_UNROLL
#endif
