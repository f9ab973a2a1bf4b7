// The raw loops of the fused SwiGLU (fast_swiglu.cpp): silu(gate) * up forward and both input
// gradients backward, over n consecutive floats. One variant per instruction set; the AVX2 one
// lives in its own translation unit built with -mavx2 -mfma and is called only after the CPU was
// checked. Torch-free, so that TU holds no inline library code the linker could share.
#pragma once

#include <cstdint>

namespace llmrdzv::model::detail {

// out = gate / (1 + exp(-gate)) * up
void swiglu_forward_scalar(const float* gate, const float* up, float* out, std::int64_t n);
void swiglu_forward_avx2(const float* gate, const float* up, float* out, std::int64_t n);

// With s = 1 / (1 + exp(-gate)): grad_up = grad * gate * s (silu's output) and
// grad_gate = grad * up * s * (1 + gate * (1 - s)), torch's silu_backward of grad * up.
void swiglu_backward_scalar(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                            std::int64_t n);
void swiglu_backward_avx2(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                          std::int64_t n);

}  // namespace llmrdzv::model::detail
