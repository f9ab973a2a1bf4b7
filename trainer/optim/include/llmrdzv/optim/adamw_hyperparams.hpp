// The hyperparameters of one AdamW step, shared by the CPU kernels (fused_adamw.hpp) and the
// GPU one (cuda_adamw.hpp). Plain C++17: nvcc compiles it too.
#pragma once

namespace llmrdzv::optim {

struct AdamWHyperparams {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  // Each gradient element is multiplied by this (rounded to fp32) as it is read, as torch's
  // clip_grad_norm_ multiplies the gradients in place by its coefficient before the step: the clip
  // without a pass of its own over the gradients. 1 changes no bit.
  double grad_scale = 1.0;
};

}  // namespace llmrdzv::optim
