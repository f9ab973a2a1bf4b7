// RMSNorm as the Llama modules apply it, fused into one pass per row forward and one backward on
// fp32 CPU tensors (see fast_rms_norm.cpp); anything else takes the composite of torch ops HF's
// LlamaRMSNorm is made of.
#pragma once

#include <ATen/core/Tensor.h>

namespace llmrdzv::model::detail {

// weight * (x / sqrt(mean(x^2 over the last dimension) + eps)), the mean taken in fp32.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace llmrdzv::model::detail
