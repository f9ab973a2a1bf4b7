// The launcher of adamw_cuda.cuh (cuda_adamw.hpp) for the gradient/model type pairs mixed
// precision has: bf16 or fp16 weights, with gradients in the same type or summed in fp32.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "llmrdzv/kernel_support/device_launch.cuh"
#include "adamw_cuda.cuh"
#include "../step_coeffs.hpp"
#include "llmrdzv/optim/cuda_adamw.hpp"

namespace llmrdzv::optim {
namespace {

using kernel_support::DeviceElement;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // grid-stride beyond: enough to fill any current GPU

template <typename Grad, typename Model>
void launch(const CudaMixedAdamWState& s, const detail::AdamWCoeffs& c, const float* scale, cudaStream_t stream) {
  const auto n = static_cast<int64_t>(s.n);
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(kMaxBlocks, (n + kThreads - 1) / kThreads));
  detail::mixed_adamw_kernel<Grad, Model><<<blocks, kThreads, 0, stream>>>(
      c, scale, s.master, s.exp_avg, s.exp_avg_sq, static_cast<const Grad*>(s.grad), static_cast<Model*>(s.model), n);
}

template <typename Model>
void launch_for_model(const CudaMixedAdamWState& s, const detail::AdamWCoeffs& c, const float* scale,
                      cudaStream_t stream) {
  if (s.grad_type == DeviceElement::f32) {
    launch<float, Model>(s, c, scale, stream);
  } else {
    launch<Model, Model>(s, c, scale, stream);
  }
}

}  // namespace

void adamw_step_cuda(const CudaMixedAdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                     const float* device_grad_scale, void* stream) {
  detail::check_hyperparams(hp, step);
  detail::require(state.model_type != DeviceElement::f32,
                  "the GPU's mixed-precision AdamW writes bf16 or fp16 weights, not fp32 ones");
  detail::require(state.grad_type == DeviceElement::f32 || state.grad_type == state.model_type,
                  "the gradient must be fp32 or in the weights' type");
  if (state.n == 0) return;
  const detail::AdamWCoeffs coeffs = detail::make_coeffs(hp, step);
  const auto s = static_cast<cudaStream_t>(stream);
  if (state.model_type == DeviceElement::bf16) {
    launch_for_model<__nv_bfloat16>(state, coeffs, device_grad_scale, s);
  } else {
    launch_for_model<__half>(state, coeffs, device_grad_scale, s);
  }
  kernel_support::check_launched("adamw_step_cuda");
}

}  // namespace llmrdzv::optim
