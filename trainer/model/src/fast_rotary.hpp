// Rotary position embeddings as Llama applies them (x * cos + rotate_half(x) * sin), fused for
// fp32 CPU tensors (see fast_rotary.cpp); anything else takes torch's ops, as HF writes them.
#pragma once

#include <ATen/core/Tensor.h>

namespace llmrdzv::model::detail {

// x: [batch, time, heads, head_dim]; cos, sin: [time, head_dim], the angles' two halves repeated.
// Returns x rotated, of x's shape and type: for each head, x * cos + cat(-x2, x1) * sin with x1, x2
// the two halves of its head_dim.
at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace llmrdzv::model::detail
