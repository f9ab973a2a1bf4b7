// Llama's MLP activation silu(gate) * up, fused for fp32 CPU tensors (see fast_swiglu.cpp);
// anything else takes torch's two ops.
#pragma once

#include <ATen/core/Tensor.h>

namespace llmrdzv::model::detail {

// silu(gate) * up for two tensors of the same shape.
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

}  // namespace llmrdzv::model::detail
