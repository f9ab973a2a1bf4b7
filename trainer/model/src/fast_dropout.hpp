// Dropout as the families' modules apply it, with fp32 CPU masks drawn in parallel (see
// fast_dropout.cpp); anything else takes at::dropout.
#pragma once

#include <torch/nn/modules/dropout.h>

namespace llmrdzv::model::detail {

// The module's dropout on x: x itself in eval mode or at p = 0.
torch::Tensor fast_dropout(const torch::nn::Dropout& dropout, const torch::Tensor& x);

}  // namespace llmrdzv::model::detail
