// The raw fp32 loops of the fused CPU ops: SwiGLU (fast_swiglu.cpp) and the softmax rows of the
// fused LM head + cross-entropy (linear_cross_entropy.cpp). One variant per instruction set: the
// AVX2 ones live in cpu_kernels_avx2.cpp, built with -mavx2 -mfma and called only where
// cpu_has_avx2_fma(); the scalar ones, with std::exp, in cpu_kernels_scalar.cpp. This header
// defines nothing inline, so the AVX2 TU holds no code the linker could share with TUs built for
// the baseline ISA.
#pragma once

#include <cstdint>

namespace llmrdzv::model::detail {

// Whether this CPU runs the _avx2 variants.
bool cpu_has_avx2_fma();

// out = gate / (1 + exp(-gate)) * up
void swiglu_forward_scalar(const float* gate, const float* up, float* out, std::int64_t n);
void swiglu_forward_avx2(const float* gate, const float* up, float* out, std::int64_t n);

// With s = 1 / (1 + exp(-gate)): grad_up = grad * gate * s (silu's output) and
// grad_gate = grad * up * s * (1 + gate * (1 - s)), torch's silu_backward of grad * up.
void swiglu_backward_scalar(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                            std::int64_t n);
void swiglu_backward_avx2(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                          std::int64_t n);

// One row of n > 0 logits: returns its logsumexp, max + log(sum(exp(row - max))), the sum taken in
// double over fp32 terms; with `softmax`, also overwrites the row with exp(row - max) / sum. A NaN
// anywhere makes the result NaN.
double logsumexp_row_scalar(float* row, std::int64_t n, bool softmax);
double logsumexp_row_avx2(float* row, std::int64_t n, bool softmax);

}  // namespace llmrdzv::model::detail
