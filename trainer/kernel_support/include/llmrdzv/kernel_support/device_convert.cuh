// Element conversions for the trainer's CUDA kernels (nvcc only): to fp32 for the arithmetic,
// and back, rounded to nearest even as torch's .to() rounds. Kernels call them qualified
// (kernel_support::to_float, kernel_support::from_float), so a CPU emulation of a kernel (tests/support) can
// provide the same overloads for torch's host types instead.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace llmrdzv::kernel_support {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
// The second argument picks the result type (a pointer to where it goes).
__device__ __forceinline__ float from_float(float x, const float*) { return x; }
__device__ __forceinline__ __nv_bfloat16 from_float(float x, const __nv_bfloat16*) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ __half from_float(float x, const __half*) { return __float2half_rn(x); }

}  // namespace llmrdzv::kernel_support
