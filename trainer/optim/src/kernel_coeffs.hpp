// The per-step scalars of one AdamW update, computed once in double (as torch does) and handed
// to the ISA kernels, plus the kernels' entry points. Shared by the dispatcher and the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace llmrdzv::optim::detail {

struct AdamWCoeffs {
  float grad_scale;  // the gradient's multiplier (clipping)
  float decay;  // 1 - lr * weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2;  // sqrt(1 - beta2^step)
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^step)
};

// The entry points of each ISA: n elements starting at the given pointers (adamw_range_bf16_*:
// a bf16 gradient, and the updated parameters rounded to bf16 into out16).
#define LLMRDZV_OPTIM_DECLARE_KERNELS(isa)                                                                     \
  void adamw_range_##isa(const AdamWCoeffs& c, float* p, const float* g, float* m, float* v, std::size_t n);   \
  void adamw_range_bf16_##isa(const AdamWCoeffs& c, float* p, const std::uint16_t* g16, float* m, float* v,    \
                              std::uint16_t* out16, std::size_t n);                                            \
  void traffic_range_##isa(float* p, const float* g, float* m, float* v, std::size_t n);

LLMRDZV_OPTIM_DECLARE_KERNELS(scalar)
LLMRDZV_OPTIM_DECLARE_KERNELS(avx2)
LLMRDZV_OPTIM_DECLARE_KERNELS(avx512)
#undef LLMRDZV_OPTIM_DECLARE_KERNELS

}  // namespace llmrdzv::optim::detail
