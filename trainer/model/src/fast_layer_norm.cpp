// fast_layer_norm.hpp: custom autograd functions over the trainer's LayerNorm kernels, forward
// (fused with the residual add before it where there is one) and backward.
#include "fast_layer_norm.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "cuda_kernels.hpp"
#include "llmrdzv/kernel_support/env_switch.hpp"
#if LLMRDZV_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "cuda_multiprocessors.hpp"

#include "llmrdzv/kernel_support/torch_element.hpp"
#endif

namespace llmrdzv::model::detail {
namespace {

#if LLMRDZV_HAVE_CUDA_KERNELS
// A block's rows are processed one after another (load, reduce, write), so the GPU keeps rows in
// flight only through the blocks resident at once: up to eight of 256 threads per multiprocessor.
// The forward has one block per row (a stride of rows past 2^20 rows); the backward about eight
// blocks per multiprocessor, each taking a stride of rows, so that its partial weight and bias
// gradients (fp32, [blocks, width]) stay small: 6.5 MB at GPT-2's 768 on an H100, 35 MB at 4096.
std::int64_t forward_blocks(std::int64_t rows) { return std::clamp<std::int64_t>(rows, 1, std::int64_t{1} << 20); }

std::int64_t backward_blocks(std::int64_t rows, const at::Device& device) {
  return std::clamp<std::int64_t>(rows, 1, 8 * multiprocessors(device));
}

struct Forward {
  at::Tensor sum, y, mean, rstd;  // sum: x + residual, where a residual is given
};

// The forward kernel over x's rows (x + residual's where residual is defined).
Forward forward_rows(const at::Tensor& input, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                     double eps) {
  const at::Tensor x = input.contiguous();
  const at::Tensor r = residual.defined() ? residual.contiguous() : at::Tensor();
  const at::Tensor gamma = weight.contiguous(), beta = bias.contiguous();
  const std::int64_t width = x.size(-1), rows = x.numel() / width;
  const c10::cuda::CUDAGuard on_device(x.device());
  Forward out{r.defined() ? at::empty_like(x) : x, at::empty_like(x), at::empty({rows}, x.options().dtype(at::kFloat)),
              at::empty({rows}, x.options().dtype(at::kFloat))};
  const LayerNormForward args{x.data_ptr(), r.defined() ? r.data_ptr() : nullptr, gamma.data_ptr(), beta.data_ptr(), rows,
                              width, forward_blocks(rows), static_cast<float>(eps),
                              r.defined() ? out.sum.data_ptr() : nullptr, out.y.data_ptr(), out.mean.data_ptr<float>(),
                              out.rstd.data_ptr<float>()};
  layer_norm_forward_cuda(args, kernel_support::device_element(x.scalar_type(), "the LayerNorm kernel"),
                          at::cuda::getCurrentCUDAStream(x.device().index()).stream());
  return out;
}

// dx (+ dresidual where defined), dgamma and dbeta from what forward saved: x, weight, mean, rstd.
torch::autograd::variable_list backward_rows(torch::autograd::AutogradContext* ctx, const at::Tensor& grad_y,
                                             const at::Tensor& grad_residual) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& weight = saved[1];
  const at::Tensor& mean = saved[2];
  const at::Tensor& rstd = saved[3];
  const at::Tensor dy = grad_y.to(x.scalar_type()).contiguous();
  const at::Tensor through = grad_residual.defined() ? grad_residual.to(x.scalar_type()).contiguous() : at::Tensor();
  const std::int64_t width = x.size(-1), rows = x.numel() / width;
  const c10::cuda::CUDAGuard on_device(x.device());
  const std::int64_t blocks = backward_blocks(rows, x.device());
  at::Tensor partial = at::empty({2, blocks, width}, x.options().dtype(at::kFloat));
  const at::Tensor gamma = weight.contiguous();
  at::Tensor dx = at::empty_like(x), dgamma = at::empty_like(gamma), dbeta = at::empty_like(gamma);
  const LayerNormBackward args{dy.data_ptr(), x.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                               gamma.data_ptr(), through.defined() ? through.data_ptr() : nullptr, rows, width, blocks,
                               partial[0].data_ptr<float>(), partial[1].data_ptr<float>(), dx.data_ptr(),
                               dgamma.data_ptr(), dbeta.data_ptr()};
  layer_norm_backward_cuda(args, kernel_support::device_element(x.scalar_type(), "the LayerNorm kernel"),
                           at::cuda::getCurrentCUDAStream(x.device().index()).stream());
  return {dx, dgamma, dbeta};
}

// y = LayerNorm(x).
struct CudaLayerNorm : public torch::autograd::Function<CudaLayerNorm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, double eps) {
    Forward f = forward_rows(input, at::Tensor(), weight, bias, eps);
    ctx->save_for_backward({f.sum, weight, f.mean, f.rstd});
    return f.y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto g = backward_rows(ctx, grad_outputs[0], at::Tensor());
    return {g[0], g[1], g[2], at::Tensor()};
  }
};

// {sum = x + delta, y = LayerNorm(sum)}: the gradient reaching sum directly and through y flows to
// both x and delta. An output nothing uses (sum after a post-LN block's norm) has no gradient: it is
// not materialised as zeros.
struct CudaAddLayerNorm : public torch::autograd::Function<CudaAddLayerNorm> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                                                const at::Tensor& delta, const at::Tensor& weight, const at::Tensor& bias,
                                                double eps) {
    ctx->set_materialize_grads(false);
    Forward f = forward_rows(input, delta, weight, bias, eps);
    ctx->save_for_backward({f.sum, weight, f.mean, f.rstd});
    return {f.sum, f.y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor& grad_sum = grad_outputs[0];
    at::Tensor grad_y = grad_outputs[1];
    if (!grad_y.defined()) grad_y = at::zeros_like(ctx->get_saved_variables()[0]);  // only the sum was used
    const auto g = backward_rows(ctx, grad_y, grad_sum);
    return {g[0], g[0], g[1], g[2], at::Tensor()};
  }
};
#endif

}  // namespace

bool layer_norm_on_cuda_kernel([[maybe_unused]] const torch::nn::LayerNorm& norm, [[maybe_unused]] const torch::Tensor& x) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  const at::Tensor& weight = norm->weight;
  const at::Tensor& bias = norm->bias;
  const at::ScalarType type = x.scalar_type();
  return kernel_support::cuda_kernels_enabled() && x.is_cuda() && x.dim() >= 1 && x.numel() > 0 &&
         norm->options.normalized_shape().size() == 1 && weight.defined() && bias.defined() &&
         weight.dim() == 1 && bias.dim() == 1 && weight.size(0) == x.size(-1) && bias.size(0) == x.size(-1) &&
         weight.device() == x.device() && bias.device() == x.device() && weight.scalar_type() == type &&
         bias.scalar_type() == type && (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf) &&
         x.size(-1) <= kLayerNormMaxWidth && !at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return false;
#endif
}

torch::Tensor layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  if (layer_norm_on_cuda_kernel(norm, x)) return CudaLayerNorm::apply(x, norm->weight, norm->bias, norm->options.eps());
#endif
  return norm(x);
}

std::pair<torch::Tensor, torch::Tensor> add_layer_norm(torch::nn::LayerNorm norm, const torch::Tensor& x,
                                                       const torch::Tensor& delta) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  if (layer_norm_on_cuda_kernel(norm, x) && delta.sizes() == x.sizes() && delta.scalar_type() == x.scalar_type() &&
      delta.device() == x.device()) {
    auto out = CudaAddLayerNorm::apply(x, delta, norm->weight, norm->bias, norm->options.eps());
    return {out[0], out[1]};
  }
#endif
  torch::Tensor sum = x + delta;
  torch::Tensor y = norm(sum);
  return {std::move(sum), std::move(y)};
}

}  // namespace llmrdzv::model::detail
