// fast_linear: a custom autograd Function over the fastest fp32 CPU GEMM measured for this CPU
// (BLIS without AVX-512, oneDNN's inner product and the wheel's MKL with it), cuda_linear on a GPU;
// the activations by HF name.
#include "fast_linear.hpp"

#include "cuda_linear.hpp"
#include "llmrdzv/kernel_support/env_switch.hpp"
#include "llmrdzv/model/cpu_gemm.hpp"

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
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#if LLMRDZV_HAVE_BLIS
#include "blis_gemm.hpp"
#endif

namespace llmrdzv::model::detail {
namespace {

// fp32 tensors on the CPU outside autocast: what the project's CPU GEMM paths take.
bool fp32_cpu(const at::Tensor& a, const at::Tensor& b) {
  return a.is_cpu() && b.is_cpu() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
         a.numel() > 0 && b.numel() > 0 && !at::autocast::is_autocast_enabled(at::kCPU);
}

bool cpu_has_avx512() {
  static const bool avx512 = at::get_cpu_capability().starts_with("AVX512");
  return avx512;
}

// Which GEMM serves fp32 CPU tensors. Measured at 2 threads on an AVX2-only AMD EPYC with the
// matrices of bench/trainer's OPT-125m step (512 tokens; forward, input and weight gradients of
// q/k/v/out, fc1, fc2 and the 50k-row LM head, interleaved in one process): BLIS (Debian's 0.9,
// Zen kernels) 136-163 GFLOP/s against 105-143 for oneDNN forward + MKL backward, 2.64 s against
// 3.09 s of GEMM per step. On AVX-512 CPUs oneDNN measured 1.3-1.8x MKL and BLIS 0.9 has no
// AVX-512 kernels for AMD, so there the products stay on oneDNN and MKL. Nor on a CPU BLIS does
// not know (its "generic" configuration: an AMD Zen 5, family 26, with BLIS 0.9 measured 2.8x
// slower than oneDNN on GPT-2's step). LLMRDZV_BLIS=0 in the environment turns BLIS off (A/B runs).
#if LLMRDZV_HAVE_BLIS
bool blis_enabled() {
  static const bool on =
      !kernel_support::switched_off("LLMRDZV_BLIS") && !cpu_has_avx512() && blis_configuration() != "generic";
  return on;
}

// BLIS takes a row- or column-major matrix with its leading dimension as given (a transpose is
// free); anything else (a broadcast, a slice of both dims) is copied first.
at::Tensor blis_layout(const at::Tensor& t) {
  const bool row_major = t.stride(1) == 1 && t.stride(0) >= std::max<std::int64_t>(1, t.size(1));
  const bool column_major = t.stride(0) == 1 && t.stride(1) >= std::max<std::int64_t>(1, t.size(0));
  return row_major || column_major ? t : t.contiguous();
}

StridedMatrix strided(const at::Tensor& t) {
  return {t.data_ptr<float>(), t.size(0), t.size(1), t.stride(0), t.stride(1)};
}

// a b (+ bias, broadcast over the rows) for 2-D fp32 CPU tensors with no empty dimension.
at::Tensor blis_mm(const at::Tensor& a_in, const at::Tensor& b_in, const at::Tensor& bias = {}) {
  const at::Tensor a = blis_layout(a_in), b = blis_layout(b_in);
  // A fresh product, the bias copied into it: expand().contiguous() would hand back the bias
  // itself for a single row, which torch counts as contiguous whatever its strides.
  at::Tensor c = at::empty({a.size(0), b.size(1)}, a.options());
  if (bias.defined()) c.copy_(bias.expand_as(c));
  blis_sgemm(strided(a), strided(b), bias.defined() ? 1.0f : 0.0f, c.data_ptr<float>(), c.stride(0),
             at::get_num_threads());
  return c;
}
#else
bool blis_enabled() { return false; }
at::Tensor blis_mm(const at::Tensor&, const at::Tensor&, const at::Tensor& = {}) {
  throw std::logic_error("blis_mm: this trainer was built without BLIS");
}
#endif

bool blis_applies(const at::Tensor& a, const at::Tensor& b) {
  return blis_enabled() && a.dim() == 2 && b.dim() == 2 && fp32_cpu(a, b);
}

// Where BLIS is not used: y = x W^T + b on oneDNN's fp32 inner product (mkldnn::_linear_pointwise,
// the op Inductor uses on CPUs) in forward, and for the input gradient where the CPU has AVX-512. The maths is
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
bool dnnl_input_gradient() { return cpu_has_avx512(); }

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

// y = x W^T + b for x [..., in], on BLIS or oneDNN.
at::Tensor cpu_linear_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  if (!blis_enabled()) return dnnl_linear_pointwise(input, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  std::vector<std::int64_t> sizes = input.sizes().vec();
  sizes.back() = weight.size(0);
  return blis_mm(input.reshape({-1, input.size(-1)}), weight.t(), bias).view(sizes);
}

std::pair<at::Tensor, at::Tensor> cpu_linear_backward(torch::autograd::AutogradContext* ctx, const at::Tensor& grad) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& input = saved[0];
  const at::Tensor& weight = saved[1];
  const at::Tensor rows = input.reshape({-1, weight.size(1)});
  at::Tensor grad_input, grad_weight;
  if (ctx->needs_input_grad(0)) {
    grad_input = (blis_enabled()           ? blis_mm(grad, weight)
                  : dnnl_input_gradient() ? dnnl_linear_pointwise(grad, weight.t(), std::nullopt)
                                          : at::mm(grad, weight))
                     .view(input.sizes());
  }
  if (ctx->needs_input_grad(1)) grad_weight = blis_enabled() ? blis_mm(grad.t(), rows) : weight_gradient(grad, rows);
  return {grad_input, grad_weight};
}

struct CpuLinear : public torch::autograd::Function<CpuLinear> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    ctx->save_for_backward({input, weight});
    return cpu_linear_forward(input, weight, bias);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor grad = grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)});
    auto [grad_input, grad_weight] = cpu_linear_backward(ctx, grad);
    return {grad_input, grad_weight, ctx->needs_input_grad(2) ? grad.sum(0) : at::Tensor()};
  }
};

// The same without a bias (the tied LM head): a custom Function's inputs must all be defined.
struct CpuLinearNoBias : public torch::autograd::Function<CpuLinearNoBias> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight) {
    ctx->save_for_backward({input, weight});
    return cpu_linear_forward(input, weight, at::Tensor());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto [grad_input, grad_weight] = cpu_linear_backward(ctx, grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)}));
    return {grad_input, grad_weight};
  }
};

// LLMRDZV_DNNL_LINEAR=0 turns the oneDNN path off.
bool dnnl_available() {
  static const bool available =
      !kernel_support::switched_off("LLMRDZV_DNNL_LINEAR") && at::hasMKLDNN() &&
      c10::Dispatcher::singleton().findSchema({"mkldnn::_linear_pointwise", ""}).has_value();
  return available;
}

bool cpu_linear_applies(const at::Tensor& input, const at::Tensor& weight) {
  return (blis_enabled() || dnnl_available()) && input.dim() >= 2 && fp32_cpu(input, weight);
}

}  // namespace

torch::Tensor fast_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (linear_on_cuda_kernel(input, weight, bias)) return cuda_linear(input, weight, bias);
  if (!cpu_linear_applies(input, weight)) return at::linear(input, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  return bias.defined() ? CpuLinear::apply(input, weight, bias) : CpuLinearNoBias::apply(input, weight);
}

torch::Tensor fast_mm(const torch::Tensor& a, const torch::Tensor& b) {
  return blis_applies(a, b) ? blis_mm(a, b) : at::mm(a, b);
}

torch::Tensor fast_linear(const torch::nn::Linear& linear, const torch::Tensor& input) {
  return fast_linear(input, linear->weight, linear->bias);
}

namespace {
bool gelu_tanh(std::string_view name) { return name == "gelu_new" || name == "gelu_pytorch_tanh"; }
}  // namespace

torch::Tensor activate(std::string_view name, const torch::Tensor& x) {
  if (gelu_tanh(name)) return at::gelu(x, "tanh");
  if (name == "gelu") return at::gelu(x);
  if (name == "relu") return at::relu(x);
  return at::silu(x);  // the configs admit nothing else
}

torch::Tensor linear_activate(const torch::nn::Linear& linear, std::string_view name, const torch::Tensor& x) {
  if (gelu_tanh(name) && linear_on_cuda_kernel(x, linear->weight, linear->bias)) {
    return cuda_linear_gelu_tanh(x, linear->weight, linear->bias);
  }
  return activate(name, fast_linear(linear, x));
}

}  // namespace llmrdzv::model::detail

namespace llmrdzv::model {

std::string cpu_gemm_backend() {
  const std::string blis = blis_configuration();
  if (detail::blis_enabled()) return "BLIS (its " + blis + " kernels)";
  std::string other = detail::dnnl_available() ? "oneDNN and torch's BLAS" : "torch's BLAS";
  if (blis == "generic" && !detail::cpu_has_avx512()) other += " (BLIS has no kernels for this CPU)";
  return other;
}

std::string blis_configuration() {
#if LLMRDZV_HAVE_BLIS
  return detail::blis_configuration();
#else
  return "";
#endif
}

}  // namespace llmrdzv::model
