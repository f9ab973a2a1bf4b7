// The mixed-precision CUDA optimizer of cuda_mixed_adamw.hpp.
#include "cuda_mixed_adamw.hpp"

#include "llmrdzv/kernel_support/env_switch.hpp"

#if LLMRDZV_OPTIM_CUDA
#include <ATen/TensorOperators.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/torch_element.hpp"
#include "llmrdzv/optim/cuda_adamw.hpp"
#endif

namespace llmrdzv::engine {

#if LLMRDZV_OPTIM_CUDA
namespace {

kernel_support::DeviceElement element_of(const at::Tensor& t) {
  return kernel_support::device_element(t.scalar_type(), "the GPU's AdamW");
}

class CudaMixedAdamW final : public MixedPrecisionUpdater {
 public:
  CudaMixedAdamW(MasterWeights& masters, const AdamWSettings& settings) : masters_(masters), settings_(settings) {
    for (const NamedParameter& p : masters_.masters()) states_.push_back({at::zeros_like(p.tensor), at::zeros_like(p.tensor), 0});
  }

  GradientNorm finish_gradients(double max_norm, double multiplier) override {
    at::NoGradGuard no_grad;
    from_masters_ = masters_.folded_gradients();
    if (from_masters_) masters_.fold_gradients();
    const std::vector<NamedParameter>& holders = from_masters_ ? masters_.masters() : masters_.model();
    std::vector<at::Tensor> grads;
    for (const NamedParameter& p : holders) {
      if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
    }
    if (grads.empty()) {
      scale_.reset();
      return {0.0};
    }
    const std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2, at::kFloat);
    const at::Tensor total = (norms.size() == 1 ? norms[0] : at::stack(norms).norm(2)) * std::abs(multiplier);
    scale_ = max_norm > 0 ? at::clamp(max_norm / (total + 1e-6), std::nullopt, 1.0) * multiplier
                          : at::full({}, multiplier, total.options());
    return GradientNorm(total);
  }

  void step(double learning_rate, double grad_scale) override {
    if (!scale_.defined()) return;  // no gradients
    const std::vector<NamedParameter>& masters = masters_.masters();
    const std::vector<NamedParameter>& model = masters_.model();
    const c10::cuda::CUDAGuard on_device(scale_.device());
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(scale_.device().index());
    for (std::size_t i = 0; i < masters.size(); ++i) {
      const at::Tensor& holder = from_masters_ ? masters[i].tensor : model[i].tensor;
      if (!holder.grad().defined()) continue;
      const at::Tensor grad = holder.grad().contiguous();
      MomentState& state = states_[i];
      optim::AdamWHyperparams hp{.lr = learning_rate,
                                 .beta1 = settings_.beta1,
                                 .beta2 = settings_.beta2,
                                 .eps = settings_.epsilon,
                                 .weight_decay = masters[i].decay ? settings_.weight_decay : 0.0,
                                 .grad_scale = grad_scale};
      optim::adamw_step_cuda({masters[i].tensor.data_ptr<float>(), state.exp_avg.data_ptr<float>(),
                              state.exp_avg_sq.data_ptr<float>(), grad.data_ptr(), element_of(grad),
                              model[i].tensor.data_ptr(), element_of(model[i].tensor),
                              static_cast<std::size_t>(grad.numel())},
                             hp, ++state.step, scale_.data_ptr<float>(), stream.stream());
    }
    scale_.reset();
  }

  std::optional<MomentState> get(const NamedParameter& p) const override {
    const MomentState& state = states_[index_of(p)];
    if (state.step == 0) return std::nullopt;
    return state;
  }

  // The kernel indexes the moments linearly: loaded ones are made contiguous.
  void set(const NamedParameter& p, MomentState state) override {
    states_[index_of(p)] = {state.exp_avg.contiguous(), state.exp_avg_sq.contiguous(), state.step};
  }

 private:
  std::size_t index_of(const NamedParameter& p) const { return parameter_index(masters_.masters(), p); }

  MasterWeights& masters_;
  AdamWSettings settings_;
  std::vector<MomentState> states_;
  at::Tensor scale_;  // fp32 scalar on the device: the coefficient of this step's gradients
  bool from_masters_ = false;  // this step's gradients are the masters' fp32 sums
};

}  // namespace
#endif

std::unique_ptr<MixedPrecisionUpdater> make_cuda_mixed_adamw([[maybe_unused]] MasterWeights& masters,
                                                            [[maybe_unused]] const AdamWSettings& settings,
                                                            [[maybe_unused]] c10::Device device) {
#if LLMRDZV_OPTIM_CUDA
  if (!device.is_cuda() || !masters.copies() || !kernel_support::cuda_kernels_enabled()) return nullptr;
  // The kernel writes one 16-bit type into contiguous weights: a model of mixed types (or with a
  // strided parameter) keeps torch's path.
  const at::ScalarType type = masters.model().front().tensor.scalar_type();
  for (const NamedParameter& p : masters.model()) {
    if (p.tensor.scalar_type() != type || !p.tensor.is_contiguous() || !p.tensor.is_cuda()) return nullptr;
  }
  return std::make_unique<CudaMixedAdamW>(masters, settings);
#endif
  return nullptr;
}

}  // namespace llmrdzv::engine
