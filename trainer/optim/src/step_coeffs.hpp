// The checks and per-step scalars every AdamW entry point shares, the CPU dispatcher's
// (fused_adamw.cpp) and the GPU launcher's (cuda/adamw_cuda.cu): header-only, so the CUDA
// library needs nothing of the CPU one. Not for the ISA kernels (they must not include library
// headers).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernel_coeffs.hpp"
#include "llmrdzv/optim/adamw_hyperparams.hpp"

namespace llmrdzv::optim::detail {

inline void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("adamw: " + message);
}

// The bias corrections and the step size in double, as torch computes them, then rounded to the
// kernels' fp32.
inline AdamWCoeffs make_coeffs(const AdamWHyperparams& hp, std::int64_t step) {
  const double bias_correction1 = 1.0 - std::pow(hp.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(hp.beta2, static_cast<double>(step));
  return AdamWCoeffs{
      .grad_scale = static_cast<float>(hp.grad_scale),
      .decay = static_cast<float>(1.0 - hp.lr * hp.weight_decay),
      .beta1 = static_cast<float>(hp.beta1),
      .one_minus_beta1 = static_cast<float>(1.0 - hp.beta1),
      .beta2 = static_cast<float>(hp.beta2),
      .one_minus_beta2 = static_cast<float>(1.0 - hp.beta2),
      .sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2)),
      .eps = static_cast<float>(hp.eps),
      .neg_step_size = static_cast<float>(-hp.lr / bias_correction1),
  };
}

inline void check_hyperparams(const AdamWHyperparams& hp, std::int64_t step) {
  require(step >= 1, "step must be >= 1 (got " + std::to_string(step) + ")");
  require(std::isfinite(hp.lr) && hp.lr >= 0, "lr must be a finite number >= 0");
  require(hp.beta1 >= 0 && hp.beta1 < 1, "beta1 must be in [0, 1)");
  require(hp.beta2 >= 0 && hp.beta2 < 1, "beta2 must be in [0, 1)");
  require(std::isfinite(hp.eps) && hp.eps > 0, "eps must be a finite number > 0");
  require(std::isfinite(hp.weight_decay) && hp.weight_decay >= 0,
          "weight_decay must be a finite number >= 0");
  require(std::isfinite(hp.grad_scale) && hp.grad_scale >= 0, "grad_scale must be a finite number >= 0");
}

}  // namespace llmrdzv::optim::detail
