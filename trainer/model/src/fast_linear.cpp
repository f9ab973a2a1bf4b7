// fast_linear: a custom autograd Function over oneDNN's fp32 inner product, chosen where it
// applies; the activations by HF name.
#include "fast_linear.hpp"

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/silu.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

namespace llmrdzv::model::detail {
namespace {

// y = x W^T + b on oneDNN's fp32 inner product (mkldnn::_linear_pointwise, the op Inductor uses
// on CPUs) in forward, and for the input gradient where the CPU has AVX-512. The maths is
// at::linear's: fp32 inputs, fp32 accumulation (oneDNN's default strict fp math mode), only the GEMM
// kernel differs. The wheel's MKL runs a generic AVX2 sgemm on AMD CPUs whatever they support. Measured
// at 2 threads with bench/trainer's OPT-125m and SmolLM-135M shapes (512 tokens): on an AVX-512 EPYC,
// oneDNN gave 1.3-1.8x MKL's GFLOP/s; on an AVX2-only EPYC its forward still wins (fc1 110 vs 80
// GFLOP/s) but its input gradient loses (OPT's fc2: 54 vs 107), so there dX stays on at::mm.
// Anything else (CUDA, non-fp32, autocast, no oneDNN) takes at::linear.
at::Tensor dnnl_linear_pointwise(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mkldnn::_linear_pointwise", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, std::string_view,
                            c10::List<std::optional<at::Scalar>>, std::optional<std::string_view>)>();
  return op.call(input, weight, bias, "none", c10::List<std::optional<at::Scalar>>(), std::nullopt);
}

// dX = dY W: an inner product with W^T as the weight where the CPU has AVX-512 (torch's own CPU
// capability, so ATEN_CPU_CAPABILITY moves both), else at::mm.
bool dnnl_input_gradient() {
  static const bool avx512 = at::get_cpu_capability().starts_with("AVX512");
  return avx512;
}

// dW = dY^T X on at::mm (the wheel's BLAS, as at::linear's backward): as an inner product it needs
// dY^T and X^T copied contiguous, and measured it is no faster overall (slower for K=256 and for the
// LM head's rows). A vocabulary-sized weight (the LM head's 50k rows) is done in blocks of
// kWeightGradientRows rows: measured at 2 threads with 512 tokens, the wheel's MKL gives 98 GFLOP/s
// for OPT-125m's head as one GEMM and 110-119 in 4096-16384-row blocks (SmolLM's: 85 and 94-104).
// Each element is the same dot product over the tokens either way.
constexpr std::int64_t kWeightGradientRows = 8192;

at::Tensor weight_gradient(const at::Tensor& grad, const at::Tensor& input) {
  const std::int64_t rows = grad.size(1);
  if (rows < 2 * kWeightGradientRows) return at::mm(grad.t(), input);
  at::Tensor grad_weight = at::empty({rows, input.size(1)}, input.options());
  for (std::int64_t begin = 0; begin < rows; begin += kWeightGradientRows) {
    const std::int64_t end = std::min(rows, begin + kWeightGradientRows);
    at::Tensor block = grad_weight.slice(0, begin, end);
    at::mm_out(block, grad.slice(1, begin, end).t(), input);
  }
  return grad_weight;
}

std::pair<at::Tensor, at::Tensor> dnnl_linear_backward(torch::autograd::AutogradContext* ctx, const at::Tensor& grad) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& input = saved[0];
  const at::Tensor& weight = saved[1];
  at::Tensor grad_input, grad_weight;
  if (ctx->needs_input_grad(0)) {
    grad_input = (dnnl_input_gradient() ? dnnl_linear_pointwise(grad, weight.t(), std::nullopt) : at::mm(grad, weight))
                     .view(input.sizes());
  }
  if (ctx->needs_input_grad(1)) grad_weight = weight_gradient(grad, input.reshape({-1, weight.size(1)}));
  return {grad_input, grad_weight};
}

struct DnnlLinear : public torch::autograd::Function<DnnlLinear> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    ctx->save_for_backward({input, weight});
    return dnnl_linear_pointwise(input, weight, bias);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor grad = grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)});
    auto [grad_input, grad_weight] = dnnl_linear_backward(ctx, grad);
    return {grad_input, grad_weight, ctx->needs_input_grad(2) ? grad.sum(0) : at::Tensor()};
  }
};

// The same without a bias (the tied LM head): a custom Function's inputs must all be defined.
struct DnnlLinearNoBias : public torch::autograd::Function<DnnlLinearNoBias> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight) {
    ctx->save_for_backward({input, weight});
    return dnnl_linear_pointwise(input, weight, std::nullopt);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto [grad_input, grad_weight] = dnnl_linear_backward(ctx, grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)}));
    return {grad_input, grad_weight};
  }
};

// LLMRDZV_DNNL_LINEAR=0 in the environment turns the oneDNN path off (A/B runs, or a suspected
// oneDNN problem).
bool dnnl_applies(const at::Tensor& input, const at::Tensor& weight) {
  static const bool available = [] {
    const char* env = std::getenv("LLMRDZV_DNNL_LINEAR");
    if (env && std::string_view(env) == "0") return false;
    return at::hasMKLDNN() && c10::Dispatcher::singleton().findSchema({"mkldnn::_linear_pointwise", ""}).has_value();
  }();
  return available && input.is_cpu() && weight.is_cpu() && input.scalar_type() == at::kFloat &&
         weight.scalar_type() == at::kFloat && input.dim() >= 2 && !at::autocast::is_autocast_enabled(at::kCPU);
}

}  // namespace

torch::Tensor fast_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!dnnl_applies(input, weight)) return at::linear(input, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  return bias.defined() ? DnnlLinear::apply(input, weight, bias) : DnnlLinearNoBias::apply(input, weight);
}

torch::Tensor fast_linear(const torch::nn::Linear& linear, const torch::Tensor& input) {
  return fast_linear(input, linear->weight, linear->bias);
}

torch::Tensor activate(std::string_view name, const torch::Tensor& x) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return at::gelu(x, "tanh");
  if (name == "gelu") return at::gelu(x);
  if (name == "relu") return at::relu(x);
  return at::silu(x);  // the configs admit nothing else
}

}  // namespace llmrdzv::model::detail
