// The scalar variants of cpu_kernels.hpp's loops, with std::exp: for CPUs without AVX2 + FMA, and
// the reference the AVX2 variants are tested against. Built for the baseline ISA, like the check
// that picks between them.
#include <algorithm>
#include <cmath>

#include "cpu_kernels.hpp"

namespace llmrdzv::model::detail {

bool cpu_has_avx2_fma() {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
}

void swiglu_forward_scalar(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void swiglu_backward_scalar(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                            std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float denominator = 1.0f + std::exp(-gate[i]);
    const float sigmoid = 1.0f / denominator;
    grad_up[i] = grad[i] * (gate[i] / denominator);
    grad_gate[i] = grad[i] * up[i] * (sigmoid * (1.0f + gate[i] * (1.0f - sigmoid)));
  }
}

double logsumexp_row_scalar(float* row, std::int64_t n, bool softmax) {
  float max = row[0];
  for (std::int64_t i = 1; i < n; ++i) max = std::max(max, row[i]);
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = std::exp(row[i] - max);  // NaN in, NaN out: the sum carries it
    if (softmax) row[i] = e;
    sum += e;
  }
  if (softmax) {
    const auto inverse = static_cast<float>(1.0 / sum);
    for (std::int64_t i = 0; i < n; ++i) row[i] *= inverse;
  }
  return static_cast<double>(max) + std::log(sum);
}

}  // namespace llmrdzv::model::detail
