// The linear layers and activations every family's modules run through: the fastest fp32 CPU
// GEMM measured for the CPU (BLIS or oneDNN, see fast_linear.cpp), on a GPU with a bias the
// trainer's bias-gradient kernel (cuda_linear.hpp), at::linear elsewhere.
#pragma once

#include <torch/nn/modules/linear.h>

#include <string_view>

namespace llmrdzv::model::detail {

// y = x W^T + b (bias optional).
torch::Tensor fast_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias = {});
torch::Tensor fast_linear(const torch::nn::Linear& linear, const torch::Tensor& input);

// a b for 2-D tensors: on BLIS where fast_linear uses it (fp32 CPU tensors), at::mm elsewhere.
torch::Tensor fast_mm(const torch::Tensor& a, const torch::Tensor& b);

// HF's ACT2FN for the names the configs admit: gelu_new / gelu_pytorch_tanh (tanh approximation),
// gelu, relu, silu.
torch::Tensor activate(std::string_view name, const torch::Tensor& x);

// activate(name, fast_linear(linear, x)): an MLP's first layer. With GELU's tanh approximation on
// a GPU, cuda_linear_gelu_tanh (the bias's gradient fused into GELU's backward).
torch::Tensor linear_activate(const torch::nn::Linear& linear, std::string_view name, const torch::Tensor& x);

}  // namespace llmrdzv::model::detail
