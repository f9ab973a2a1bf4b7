// The LM head and the cross-entropy fused, a chunk of positions at a time: the [positions, vocab]
// logits of a whole batch (3.3 GB in fp32 for GPT-2 at 16 x 1024) never exist at once. Each
// chunk's logits are made, turned into its loss and, when training, straight into its gradients
// (d summed loss / d logits = softmax - one-hot); backward then only scales the gradients saved by
// forward, by 1 / counted positions and the loss's own gradient, in fp32. The maths is torch's
// cross_entropy over logits.float() with ignore_index -100 and a mean reduction, as HF's loss
// takes it: softmax in fp32, the gradient rounded to the head's type for its two matrix products
// (unscaled, so fp16 keeps its small entries). A batch with nothing counted has a NaN loss, as
// torch's, and zero gradients.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace llmrdzv::model::detail {

// Mean cross-entropy of hidden [N, C] x weight [V, C]^T against targets [N] (int64, -100 =
// ignored). Differentiable in hidden and weight. `chunk_elements` bounds a chunk's logits
// (rows x V); at least one row per chunk.
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                                   std::int64_t chunk_elements = std::int64_t{1} << 26);

}  // namespace llmrdzv::model::detail
