// A linear layer with a bias on a GPU (alone, or followed by GELU): torch's products, and the bias's
// gradient (the output's gradient summed over the tokens) in the trainer's column-sum kernels
// (cuda/column_sums.cuh; for GELU, fused with its backward) instead of torch's reduction.
#pragma once

#include <torch/types.h>

namespace llmrdzv::model::detail {

// Whether cuda_linear takes these: input, weight and bias defined, on one CUDA device, in one of
// fp32, bf16 and fp16, at least one token, no autocast, and the kernels built and not switched off
// (LLMRDZV_CUDA_KERNELS=0).
bool linear_on_cuda_kernel(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias);

// y = x W^T + b for x [..., in] (at::linear's forward and products in backward).
torch::Tensor cuda_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias);

// gelu_tanh(x W^T + b) (HF's gelu_new): in backward, GELU's gradient and the bias's in one kernel
// (cuda/gelu_backward.cuh) where linear_on_cuda_kernel holds; torch's ops otherwise.
torch::Tensor cuda_linear_gelu_tanh(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace llmrdzv::model::detail
