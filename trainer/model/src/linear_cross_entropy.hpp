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
// (rows x V) to the memory of that many fp32 values; at least one row per chunk. Where the
// trainer's CUDA kernel takes the chunks (a CUDA build with the kernels on, hidden and targets on
// one GPU, no autocast) the logits stay in the head's type: twice as many bf16/fp16 rows fit.
//
// `tied_box` (optional) joins the loss to tied_embedding() of the same forward when the head's
// weight is the token embedding: backward then hands the head's weight gradient to the lookup
// through the box instead of to autograd (see tied_embedding).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                                   std::int64_t chunk_elements = std::int64_t{1} << 26,
                                   const torch::Tensor& tied_box = {});

// An empty tensor that carries a tied head's weight gradient from linear_cross_entropy's backward
// to tied_embedding's, which runs later in the same backward pass (the lookup is upstream of
// everything).
torch::Tensor make_tied_box();

// The token lookup weight[ids] of a model whose LM head is `weight` too. Its backward adds the
// batch's rows into the head's dense gradient in place (found in `tied_box`) and returns that sum
// as the weight's one gradient; autograd would otherwise sum the two out of place, a fresh copy of
// the whole [vocab, width] table per step (302 ms of a 3.2 s OPT-125m step on 2 cores). Rows of
// `padding_idx` (-1: none) get no lookup gradient, as at::embedding's. With an empty box the
// gradient is at::embedding's sparse one.
torch::Tensor tied_embedding(const torch::Tensor& weight, const torch::Tensor& ids, std::int64_t padding_idx,
                             const torch::Tensor& tied_box);

}  // namespace llmrdzv::model::detail
