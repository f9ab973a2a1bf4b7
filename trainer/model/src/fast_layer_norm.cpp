// fast_layer_norm.hpp: a custom autograd function whose forward is torch's native_layer_norm
// (which keeps each row's mean and 1 / std in fp32) and whose backward is the trainer's kernel.
#include "fast_layer_norm.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/native_layer_norm.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>

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
// Rows per block of the backward's first kernel: about four blocks per multiprocessor, so that
// each block's partial weight and bias gradients (fp32, [blocks, width]) stay a few MB.
std::int64_t backward_blocks(std::int64_t rows, const at::Device& device) {
  return std::clamp<std::int64_t>(rows, 1, 4 * multiprocessors(device));
}

struct CudaLayerNorm : public torch::autograd::Function<CudaLayerNorm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, double eps) {
    const at::Tensor x = input.contiguous();
    auto [y, mean, rstd] = at::native_layer_norm(x, {x.size(-1)}, weight, bias, eps);
    ctx->save_for_backward({x, weight, mean, rstd});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor mean = saved[2].to(at::kFloat).contiguous(), rstd = saved[3].to(at::kFloat).contiguous();
    const at::Tensor dy = grad_outputs[0].to(x.scalar_type()).contiguous();
    const std::int64_t width = x.size(-1), rows = x.numel() / width;
    const c10::cuda::CUDAGuard on_device(x.device());
    const std::int64_t blocks = backward_blocks(rows, x.device());
    at::Tensor partial = at::empty({2, blocks, width}, x.options().dtype(at::kFloat));
    const at::Tensor gamma = weight.contiguous();
    at::Tensor dx = at::empty_like(x), dgamma = at::empty_like(gamma), dbeta = at::empty_like(gamma);
    const LayerNormBackward args{dy.data_ptr(), x.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                 gamma.data_ptr(), rows, width, blocks, partial[0].data_ptr<float>(),
                                 partial[1].data_ptr<float>(), dx.data_ptr(), dgamma.data_ptr(), dbeta.data_ptr()};
    layer_norm_backward_cuda(args, kernel_support::device_element(x.scalar_type(), "the LayerNorm kernel"),
                             at::cuda::getCurrentCUDAStream(x.device().index()).stream());
    return {dx, dgamma, dbeta, at::Tensor()};
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

}  // namespace llmrdzv::model::detail
