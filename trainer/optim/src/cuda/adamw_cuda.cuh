// AdamW for mixed precision on a GPU, one pass per parameter: it reads the gradient (bf16, fp16
// or fp32), updates the fp32 master weight and both moments with AdamWUpdate (the CPU kernels'
// operations, in their order), and writes the new master rounded into the model's bf16/fp16
// weight. torch's path for the same step makes about five passes: the gradient copied to fp32,
// scaled by the clip coefficient, the fused AdamW, then the masters copied back into the model.
//
// The lanes are single floats with IEEE round-to-nearest operations (CUDA's _rn intrinsics on the
// device), so nvcc contracts nothing into a fused multiply-add the CPU kernels do not have: the
// GPU and the CPU's scalar kernel give the same bits. Written against CUDA's built-ins
// (threadIdx, blockIdx, blockDim, gridDim) and kernel_support's to_float/from_float only, so that
// tests also run this source on the CPU (tests/support/cuda_block_emulation.hpp).
#pragma once

#include <math.h>
#include <stdint.h>

#include "../kernel_body.hpp"

namespace llmrdzv::optim::detail {

struct CudaLanes {
  using reg = float;
  LLMRDZV_HOST_DEVICE static reg splat(float x) { return x; }
#ifdef __CUDA_ARCH__
  __device__ static reg add(reg a, reg b) { return __fadd_rn(a, b); }
  __device__ static reg mul(reg a, reg b) { return __fmul_rn(a, b); }
  __device__ static reg div(reg a, reg b) { return __fdiv_rn(a, b); }
  __device__ static reg sqrt(reg a) { return __fsqrt_rn(a); }
  __device__ static reg fmadd(reg a, reg b, reg c) { return __fmaf_rn(a, b, c); }
#else
  static reg add(reg a, reg b) { return a + b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg div(reg a, reg b) { return a / b; }
  static reg sqrt(reg a) { return sqrtf(a); }
  static reg fmadd(reg a, reg b, reg c) { return fmaf(a, b, c); }
#endif
};

// Elements [0, n), grid-stride. `device_scale` (may be null) multiplies the coefficients'
// grad_scale: the clip coefficient, computed on the device, so the host never waits for it.
template <typename Grad, typename Model>
__global__ void mixed_adamw_kernel(AdamWCoeffs c, const float* device_scale, float* master, float* exp_avg,
                                   float* exp_avg_sq, const Grad* grad, Model* model, int64_t n) {
  if (device_scale != nullptr) c.grad_scale = CudaLanes::mul(c.grad_scale, *device_scale);
  const AdamWUpdate<CudaLanes> update(c);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float p = master[i], m = exp_avg[i], v = exp_avg_sq[i];
    update(p, kernel_support::to_float(grad[i]), m, v);
    master[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    model[i] = kernel_support::from_float(p, model);
  }
}

}  // namespace llmrdzv::optim::detail
