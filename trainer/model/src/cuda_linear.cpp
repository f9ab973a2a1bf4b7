// cuda_linear.hpp: custom autograd Functions whose forward is at::linear (then GELU) and whose
// backward is at::linear's two products with the bias gradient from the column-sum kernels (fused
// with GELU's backward).
#include "cuda_linear.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>

#include "cuda_kernels.hpp"
#include "llmrdzv/kernel_support/env_switch.hpp"
#if LLMRDZV_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>

#include "cuda_multiprocessors.hpp"
#include "llmrdzv/kernel_support/torch_element.hpp"
#endif

namespace llmrdzv::model::detail {
namespace {

#if LLMRDZV_HAVE_CUDA_KERNELS
// The sum over rows of grad [rows, width] (contiguous), in grad's type.
at::Tensor bias_gradient(const at::Tensor& grad) {
  const std::int64_t rows = grad.size(0), width = grad.size(1);
  const std::int64_t parts = column_sum_parts(rows, width, multiprocessors(grad.device()));
  at::Tensor partial = at::empty({parts, width}, grad.options().dtype(at::kFloat));
  at::Tensor out = at::empty({width}, grad.options());
  const ColumnSums args{grad.data_ptr(), rows, width, parts, partial.data_ptr<float>(), out.data_ptr()};
  column_sums_cuda(args, kernel_support::device_element(grad.scalar_type(), "the bias gradient kernel"),
                   at::cuda::getCurrentCUDAStream(grad.device().index()).stream());
  return out;
}

struct CudaLinear : public torch::autograd::Function<CudaLinear> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    ctx->save_for_backward({input, weight});
    return at::linear(input, weight, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grad_outputs[0].reshape({-1, weight.size(0)}).to(weight.scalar_type()).contiguous();
    const c10::cuda::CUDAGuard on_device(grad.device());
    at::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) grad_input = at::mm(grad, weight).view(input.sizes());
    if (ctx->needs_input_grad(1)) grad_weight = at::mm(grad.t(), input.reshape({-1, weight.size(1)}));
    if (ctx->needs_input_grad(2)) grad_bias = bias_gradient(grad);
    return {grad_input, grad_weight, grad_bias};
  }
};

// gelu_tanh(x W^T + b): in backward, GELU's gradient and the bias's (its column sums) in one kernel.
struct CudaLinearGeluTanh : public torch::autograd::Function<CudaLinearGeluTanh> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    const at::Tensor before = at::linear(input, weight, bias);
    ctx->save_for_backward({input, weight, before});
    return at::gelu(before, "tanh");
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor before = saved[2].reshape({-1, weight.size(0)}).contiguous();
    const at::Tensor grad = grad_outputs[0].reshape({-1, weight.size(0)}).to(weight.scalar_type()).contiguous();
    const std::int64_t rows = grad.size(0), width = grad.size(1);
    const c10::cuda::CUDAGuard on_device(grad.device());
    const std::int64_t parts = column_sum_parts(rows, width, multiprocessors(grad.device()));
    at::Tensor partial = at::empty({parts, width}, grad.options().dtype(at::kFloat));
    at::Tensor grad_before = at::empty_like(grad), grad_bias = at::empty({width}, grad.options());
    const GeluBackwardColumnSums args{grad.data_ptr(), before.data_ptr(), rows, width, parts, partial.data_ptr<float>(),
                                      grad_before.data_ptr(), grad_bias.data_ptr()};
    gelu_tanh_backward_column_sums_cuda(args, kernel_support::device_element(grad.scalar_type(), "the GELU kernel"),
                                        at::cuda::getCurrentCUDAStream(grad.device().index()).stream());
    at::Tensor grad_input, grad_weight;
    if (ctx->needs_input_grad(0)) grad_input = at::mm(grad_before, weight).view(input.sizes());
    if (ctx->needs_input_grad(1)) grad_weight = at::mm(grad_before.t(), input.reshape({-1, weight.size(1)}));
    return {grad_input, grad_weight, ctx->needs_input_grad(2) ? grad_bias : at::Tensor()};
  }
};
#endif

}  // namespace

bool linear_on_cuda_kernel([[maybe_unused]] const torch::Tensor& input, [[maybe_unused]] const torch::Tensor& weight,
                           [[maybe_unused]] const torch::Tensor& bias) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  if (!input.defined() || !weight.defined() || !bias.defined()) return false;
  const at::ScalarType type = input.scalar_type();
  return kernel_support::cuda_kernels_enabled() && input.is_cuda() && input.dim() >= 2 && input.numel() > 0 &&
         weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == input.size(-1) && bias.size(0) == weight.size(0) &&
         weight.device() == input.device() && bias.device() == input.device() &&
         weight.scalar_type() == type && bias.scalar_type() == type &&
         (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf) &&
         !at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return false;
#endif
}

torch::Tensor cuda_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  if (linear_on_cuda_kernel(input, weight, bias)) return CudaLinear::apply(input, weight, bias);
#endif
  return at::linear(input, weight, bias);
}

torch::Tensor cuda_linear_gelu_tanh(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  if (linear_on_cuda_kernel(input, weight, bias)) return CudaLinearGeluTanh::apply(input, weight, bias);
#endif
  return at::gelu(at::linear(input, weight, bias), "tanh");
}

}  // namespace llmrdzv::model::detail
