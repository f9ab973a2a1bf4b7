// The one-process TrainingEngine: no synchronisation, torch::optim::AdamW with a decay group and
// a no-decay group, state saved as one exp_avg / exp_avg_sq / step entry per named parameter.
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <limits>
#include <stdexcept>

#include "llmrdzv/train/training_engine.hpp"

namespace llmrdzv::train {
namespace {

class SingleProcessEngine final : public TrainingEngine {
 public:
  explicit SingleProcessEngine(c10::Device device) : device_(device) {}

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  c10::Device device() const override { return device_; }

  void attach(std::vector<NamedParameter> parameters, const AdamWSettings& settings) override {
    parameters_ = std::move(parameters);
    std::vector<torch::Tensor> decay;
    std::vector<torch::Tensor> no_decay;
    for (const auto& p : parameters_) (p.decay ? decay : no_decay).push_back(p.tensor);
    auto options = torch::optim::AdamWOptions(0.0)
                       .betas({settings.beta1, settings.beta2})
                       .eps(settings.epsilon)
                       .weight_decay(settings.weight_decay);
    auto no_decay_options = std::make_unique<torch::optim::AdamWOptions>(options);
    no_decay_options->weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay);
    groups.emplace_back(no_decay, std::move(no_decay_options));
    optimizer_ = std::make_unique<torch::optim::AdamW>(groups, options);
    all_tensors_ = decay;
    all_tensors_.insert(all_tensors_.end(), no_decay.begin(), no_decay.end());
  }

  void begin_micro_step(bool) override {}

  double finish_gradients(double max_norm) override {
    const double limit = max_norm > 0 ? max_norm : std::numeric_limits<double>::infinity();
    return torch::nn::utils::clip_grad_norm_(all_tensors_, limit);
  }

  void optimizer_step(double learning_rate) override {
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(learning_rate);
    optimizer_->step();
    optimizer_->zero_grad(true);
  }

  std::vector<double> all_reduce_sum(std::vector<double> values) override { return values; }
  void barrier() override {}

  TensorMap optimizer_state() const override {
    TensorMap state;
    for (const auto& p : parameters_) {
      const auto found = optimizer_->state().find(p.tensor.unsafeGetTensorImpl());
      if (found == optimizer_->state().end()) continue;
      const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*found->second);
      state["exp_avg." + p.name] = adam.exp_avg();
      state["exp_avg_sq." + p.name] = adam.exp_avg_sq();
      state["step." + p.name] = torch::tensor(adam.step(), torch::kInt64);
    }
    return state;
  }

  void load_optimizer_state(const TensorMap& state) override {
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
      auto adam = std::make_unique<torch::optim::AdamWParamState>();
      adam->step(step->item<std::int64_t>());
      adam->exp_avg(exp_avg->to(p.tensor.options(), false, true));
      adam->exp_avg_sq(exp_avg_sq->to(p.tensor.options(), false, true));
      optimizer_->state()[p.tensor.unsafeGetTensorImpl()] = std::move(adam);
      used += 3;
    }
    if (used != state.size()) {
      throw std::runtime_error("optimizer state holds entries for parameters this model does not have");
    }
  }

 private:
  c10::Device device_;
  std::vector<NamedParameter> parameters_;
  std::vector<torch::Tensor> all_tensors_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

}  // namespace

std::unique_ptr<TrainingEngine> make_single_process_engine(const TrainOptions& options) {
  if (options.offload != "none") {
    throw std::invalid_argument("--offload " + options.offload + " needs the distributed engine (trainer/dist)");
  }
  const bool cuda = !options.use_cpu && torch::cuda::is_available();
  return std::make_unique<SingleProcessEngine>(cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
}

}  // namespace llmrdzv::train
