// The one-process TrainingEngine: no synchronisation; AdamW with a decay and a no-decay group
// (adamw_updaters.hpp: the fused SIMD kernel on the CPU, torch's multi-tensor fused AdamW on
// CUDA). bf16/fp16 parameters get fp32 master weights (MasterWeights): the optimizer works on
// those; on CUDA, where the build has the trainer's kernels, one kernel per parameter does the
// clip, the update and the write-back (cuda_mixed_adamw.hpp).
#include "llmrdzv/engine/single_process_engine.hpp"

#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/stack.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "llmrdzv/engine/adamw_updaters.hpp"
#include "llmrdzv/engine/master_weights.hpp"
#include "cuda_mixed_adamw.hpp"

namespace llmrdzv::engine {
namespace {

struct Clip {
  GradientNorm norm;  // before clipping
  double deferred_scale = 1.0;  // the coefficient the optimizer step still has to apply
};

// torch::nn::utils::clip_grad_norm_'s maths (per-parameter L2 norms, in one multi-tensor call as
// torch.nn.utils.clip_grad_norm_ takes them, the norm of those, coefficient max_norm / (norm +
// 1e-6) clamped to 1). On a GPU the gradients are multiplied by the coefficient where it is, as
// torch does, and the norm is returned unread: the host does not wait for it. On the CPU the
// coefficient is handed to the AdamW kernel, which multiplies each gradient element by it as it
// reads it: the same fp32 products without a pass of their own over the gradients (about 35 ms
// of a SmolLM-135M step on 2 cores).
Clip clip_grad_norm(const std::vector<at::Tensor>& parameters, double max_norm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return {0.0};
  const std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2);
  const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2);
  if (max_norm <= 0) return {total.is_cpu() ? GradientNorm(total.item<double>()) : GradientNorm(total)};
  const at::Tensor coef = at::clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  if (!total.is_cpu()) {
    at::_foreach_mul_(grads, coef);
    return {GradientNorm(total)};
  }
  return {total.item<double>(), coef.item<double>()};
}

class SingleProcessEngine final : public TrainingEngine {
 public:
  explicit SingleProcessEngine(c10::Device device) : device_(device) {}

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  c10::Device device() const override { return device_; }

  void attach(std::vector<NamedParameter> parameters, const AdamWSettings& settings) override {
    masters_.emplace(std::move(parameters));
    parameters_ = masters_->masters();
    tensors_ = masters_->master_tensors();
    std::unique_ptr<MixedPrecisionUpdater> mixed = make_cuda_mixed_adamw(*masters_, settings, device_);
    mixed_ = mixed.get();
    updater_ = mixed ? std::unique_ptr<AdamWUpdater>(std::move(mixed)) : make_adamw(parameters_, settings);
  }

  void begin_micro_step(bool) override { masters_->fold_gradients(); }

  GradientNorm finish_gradients(double max_norm, double gradient_multiplier) override {
    if (mixed_) return mixed_->finish_gradients(max_norm, gradient_multiplier);
    masters_->fold_gradients();
    if (gradient_multiplier != 1.0) {
      at::NoGradGuard no_grad;
      for (auto& tensor : tensors_) {
        if (tensor.grad().defined()) tensor.mutable_grad().mul_(gradient_multiplier);
      }
    }
    const Clip clip = clip_grad_norm(tensors_, max_norm);
    grad_scale_ = clip.deferred_scale;
    return clip.norm;
  }

  void optimizer_step(double learning_rate) override {
    updater_->step(learning_rate, std::exchange(grad_scale_, 1.0));
    masters_->zero_gradients();
    if (!mixed_) masters_->write_back();  // the mixed-precision kernel wrote the weights itself
  }

  void skip_step() override {
    grad_scale_ = 1.0;
    masters_->zero_gradients();
  }

  std::vector<double> all_reduce_sum(std::vector<double> values) override { return values; }
  void barrier() override {}

  TensorMap optimizer_state() const override {
    TensorMap state;
    for (const auto& p : parameters_) {
      const std::optional<MomentState> moments = updater_->get(p);
      if (!moments) continue;
      state["exp_avg." + p.name] = moments->exp_avg;
      state["exp_avg_sq." + p.name] = moments->exp_avg_sq;
      state["step." + p.name] = torch::tensor(moments->step, torch::kInt64);
    }
    masters_->save(state);
    return state;
  }

  void load_optimizer_state(const TensorMap& saved) override {
    TensorMap state = saved;
    masters_->load(state);  // takes its entries out
    std::size_t used = 0;
    for (const auto& p : parameters_) {
      const auto entry = [&](const std::string& kind) -> const at::Tensor* {
        const auto found = state.find(kind + "." + p.name);
        return found == state.end() ? nullptr : &found->second;
      };
      const at::Tensor* exp_avg = entry("exp_avg");
      const at::Tensor* exp_avg_sq = entry("exp_avg_sq");
      const at::Tensor* step = entry("step");
      if (!exp_avg && !exp_avg_sq && !step) continue;  // never updated (saved before step 1)
      if (!exp_avg || !exp_avg_sq || !step) {
        throw std::runtime_error("optimizer state for '" + p.name + "' is incomplete");
      }
      if (exp_avg->sizes() != p.tensor.sizes() || exp_avg_sq->sizes() != p.tensor.sizes() ||
          step->numel() != 1 || step->scalar_type() != torch::kInt64) {
        throw std::runtime_error("optimizer state for '" + p.name + "' does not match the parameter's shape");
      }
      updater_->set(p, {exp_avg->to(p.tensor.options(), false, true), exp_avg_sq->to(p.tensor.options(), false, true),
                        step->item<std::int64_t>()});
      used += 3;
    }
    if (used != state.size()) {
      throw std::runtime_error("optimizer state holds entries for parameters this model does not have");
    }
  }

 private:
  c10::Device device_;
  std::optional<MasterWeights> masters_;
  std::vector<NamedParameter> parameters_;  // the masters: what the optimizer updates
  std::vector<torch::Tensor> tensors_;
  std::unique_ptr<AdamWUpdater> updater_;
  MixedPrecisionUpdater* mixed_ = nullptr;  // updater_ itself, where it is the GPU's mixed-precision one
  double grad_scale_ = 1.0;  // the clip coefficient finish_gradients() left to the next step
};

}  // namespace

std::unique_ptr<TrainingEngine> make_single_process_engine(const EngineOptions& options) {
  if (options.offload != Offload::none) {
    throw std::invalid_argument("--offload " + std::string(option_name(options.offload)) +
                                " needs the distributed engine: run under srun --llm-rdzv (or with a rendezvous in the environment)");
  }
  if (options.shard_parameters) {
    throw std::invalid_argument(
        "--shard_parameters needs the distributed engine (2 or more ranks): run under srun --llm-rdzv or with --nproc");
  }
  const bool cuda = !options.use_cpu && torch::cuda::is_available();
  return std::make_unique<SingleProcessEngine>(cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
}

}  // namespace llmrdzv::engine
