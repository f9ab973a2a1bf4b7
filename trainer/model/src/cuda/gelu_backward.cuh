// The backward of GELU's tanh approximation (HF's gelu_new, GPT-2's activation) as an entry of
// column_sums.cuh's first pass: while it writes the gradient of the MLP's first linear layer's
// output, it adds that gradient over the tokens, which is the layer's bias gradient. torch reads
// the same gradient again for the bias (~100 MB per GPT-2 124M layer at 16 x 1024 tokens in bf16).
//
// gelu(x) = x / 2 * (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi), so
// gelu'(x) = (1 + t) / 2 + x / 2 * (1 - t^2) * k * (1 + 3 * 0.044715 x^2), t = tanh(k (x + 0.044715 x^3)),
// in fp32, grouped as torch's CUDA kernel groups it.
#pragma once

#include <math.h>
#include <stdint.h>

namespace llmrdzv::model::cuda_kernels {

// Entry i: dx[i] = dy[i] * gelu'(x[i]), stored in T; returns the stored value (what torch's
// reduction would add) as fp32.
template <typename T>
struct GeluTanhBackward {
  const T* dy;
  const T* x;
  T* dx;
  __device__ __forceinline__ float operator()(int64_t i) const {
    constexpr float kBeta = 0.7978845608028654f;  // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    const float v = kernel_support::to_float(x[i]);
    const float v_squared = v * v;
    const float t = tanhf(kBeta * (v + kKappa * (v_squared * v)));
    const float left = 0.5f * v;
    const float derivative = 0.5f * (1.0f + t) + left * (1.0f - t * t) * (kBeta * (1.0f + 3.0f * kKappa * v_squared));
    const T stored = kernel_support::from_float(kernel_support::to_float(dy[i]) * derivative, dx);
    dx[i] = stored;
    return kernel_support::to_float(stored);
  }
};

}  // namespace llmrdzv::model::cuda_kernels
