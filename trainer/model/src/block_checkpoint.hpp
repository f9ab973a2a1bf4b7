// Activation checkpointing for one transformer block (LibTorch C++ has no torch.utils.checkpoint).
#pragma once

#include "llmrdzv/model/causal_lm.hpp"

namespace llmrdzv::model::detail {

// Runs block(hidden) without keeping its intermediate activations; backward recomputes the block
// with the RNG state and autocast settings of the original forward, then back-propagates through
// the recomputation (the block's parameter gradients accumulate as usual). Falls back to a plain
// call when no gradient will flow into hidden.
torch::Tensor checkpointed_block_forward(DecoderBlockImpl& block, const torch::Tensor& hidden);

}  // namespace llmrdzv::model::detail
