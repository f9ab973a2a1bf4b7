// LayerNorm as the GPT-2 and OPT modules apply it: on a GPU with the trainer's CUDA kernels, the
// forward of cuda/layer_norm_forward.cuh (which also takes the residual add before a block's second
// LayerNorm) and the one-pass backward of cuda/layer_norm_backward.cuh; anything else is torch's
// LayerNorm module as it is.
#pragma once

#include <torch/nn/modules/normalization.h>

#include <utility>

namespace llmrdzv::model::detail {

// y = LayerNorm(x) with `norm`'s weight, bias and eps (the module by value: a shared handle).
torch::Tensor layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x);

// {x + delta, LayerNorm(x + delta)}: a pre-LN block's residual add and the LayerNorm after it, in one
// kernel each way where layer_norm would take the kernels (and delta is x's shape, type and device).
std::pair<torch::Tensor, torch::Tensor> add_layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x,
                                                       const torch::Tensor& delta);

// Whether layer_norm takes the trainer's CUDA kernels for these (else torch's module): x and the
// module's weight and bias on one CUDA device in one of fp32, bf16 and fp16, a width up to 4096,
// no autocast, and the kernels built and not switched off (LLMRDZV_CUDA_KERNELS=0).
bool layer_norm_on_cuda_kernel(const torch::nn::LayerNorm& norm, const torch::Tensor& x);

}  // namespace llmrdzv::model::detail
