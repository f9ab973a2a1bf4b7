// The one-process TrainingEngine: no synchronisation; AdamW with a decay and a no-decay group.
// On the CPU the update is the project's fused SIMD AdamW (llmrdzv::optim, one pass over p, g, m,
// v; it matches torch::optim::AdamW to 1e-6, see tests/trainer/optim) because torch's AdamW makes
// several passes and temporaries per parameter; on CUDA it is torch::optim::AdamW. Both keep the
// same state per named parameter (exp_avg, exp_avg_sq, step), so checkpoints look the same.
// bf16/fp16 parameters get fp32 master weights (MasterWeights): the optimizer works on those.
#include "llmrdzv/engine/single_process_engine.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/stack.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

#include "llmrdzv/engine/master_weights.hpp"
#include "llmrdzv/optim/fused_adamw.hpp"

namespace llmrdzv::engine {
namespace {

// torch::nn::utils::clip_grad_norm_'s maths (per-parameter L2 norms, the norm of those, coefficient
// max_norm / (norm + 1e-6) clamped to 1), except that a coefficient of exactly 1 skips multiplying
// every gradient by it: a pass over all gradients that would change no bit.
double clip_grad_norm(const std::vector<at::Tensor>& parameters, double max_norm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> norms;
  for (const auto& p : parameters) {
    const at::Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    grads.push_back(grad);
    norms.push_back(grad.norm(2));
  }
  if (grads.empty()) return 0.0;
  const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2);
  const at::Tensor coef = at::clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  if (coef.item<double>() < 1.0) {
    for (auto& grad : grads) grad.mul_(coef);
  }
  return total.item<double>();
}

// Adam moments and step count of one parameter, in the shape the checkpoint stores.
struct MomentState {
  at::Tensor exp_avg;
  at::Tensor exp_avg_sq;
  std::int64_t step = 0;
};

// Where the AdamW state lives and how it is applied: the fused CPU kernel or torch's AdamW.
class Updater {
 public:
  virtual ~Updater() = default;
  virtual void step(double learning_rate) = 0;
  // nullopt for a parameter not updated yet.
  virtual std::optional<MomentState> get(const NamedParameter& p) const = 0;
  virtual void set(const NamedParameter& p, MomentState state) = 0;
};

class FusedCpuUpdater final : public Updater {
 public:
  FusedCpuUpdater(const std::vector<NamedParameter>& parameters, const AdamWSettings& s) : parameters_(parameters) {
    for (const auto& p : parameters_) {
      if (p.tensor.scalar_type() != at::kFloat || !p.tensor.is_contiguous()) {
        throw std::invalid_argument("the fused CPU AdamW needs contiguous fp32 parameters ('" + p.name + "' is not)");
      }
      states_.push_back({at::zeros_like(p.tensor), at::zeros_like(p.tensor), 0});
    }
    decay_ = {0.0, s.beta1, s.beta2, s.epsilon, s.weight_decay};
    no_decay_ = decay_;
    no_decay_.weight_decay = 0;
  }

  void step(double learning_rate) override {
    // As many threads as torch's intra-op pool (--threads), not one per hardware thread.
    optim::KernelOptions kernel_options;
    kernel_options.threads = static_cast<unsigned>(std::max(1, at::get_num_threads()));
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      const at::Tensor& param = parameters_[i].tensor;
      const at::Tensor grad = param.grad();
      if (!grad.defined()) continue;
      const at::Tensor dense = grad.contiguous();
      MomentState& state = states_[i];
      optim::AdamWHyperparams hp = parameters_[i].decay ? decay_ : no_decay_;
      hp.lr = learning_rate;
      const auto n = static_cast<std::size_t>(param.numel());
      optim::adamw_step({{param.data_ptr<float>(), n},
                         {dense.data_ptr<float>(), n},
                         {state.exp_avg.data_ptr<float>(), n},
                         {state.exp_avg_sq.data_ptr<float>(), n}},
                        hp, ++state.step, kernel_options);
    }
  }

  std::optional<MomentState> get(const NamedParameter& p) const override {
    const MomentState& state = states_[index_of(p)];
    if (state.step == 0) return std::nullopt;
    return state;
  }

  void set(const NamedParameter& p, MomentState state) override { states_[index_of(p)] = std::move(state); }

 private:
  std::size_t index_of(const NamedParameter& p) const {
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      if (parameters_[i].tensor.is_same(p.tensor)) return i;
    }
    throw std::logic_error("unknown parameter " + p.name);
  }

  std::vector<NamedParameter> parameters_;
  std::vector<MomentState> states_;
  optim::AdamWHyperparams decay_;
  optim::AdamWHyperparams no_decay_;
};

class TorchUpdater final : public Updater {
 public:
  TorchUpdater(const std::vector<NamedParameter>& parameters, const AdamWSettings& s) {
    std::vector<torch::Tensor> decay;
    std::vector<torch::Tensor> no_decay;
    for (const auto& p : parameters) (p.decay ? decay : no_decay).push_back(p.tensor);
    auto options = torch::optim::AdamWOptions(0.0).betas({s.beta1, s.beta2}).eps(s.epsilon).weight_decay(s.weight_decay);
    auto no_decay_options = std::make_unique<torch::optim::AdamWOptions>(options);
    no_decay_options->weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay);
    groups.emplace_back(no_decay, std::move(no_decay_options));
    optimizer_ = std::make_unique<torch::optim::AdamW>(groups, options);
  }

  void step(double learning_rate) override {
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(learning_rate);
    optimizer_->step();
  }

  std::optional<MomentState> get(const NamedParameter& p) const override {
    const auto found = optimizer_->state().find(p.tensor.unsafeGetTensorImpl());
    if (found == optimizer_->state().end()) return std::nullopt;
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*found->second);
    return MomentState{adam.exp_avg(), adam.exp_avg_sq(), adam.step()};
  }

  void set(const NamedParameter& p, MomentState state) override {
    auto adam = std::make_unique<torch::optim::AdamWParamState>();
    adam->step(state.step);
    adam->exp_avg(std::move(state.exp_avg));
    adam->exp_avg_sq(std::move(state.exp_avg_sq));
    optimizer_->state()[p.tensor.unsafeGetTensorImpl()] = std::move(adam);
  }

 private:
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

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
    if (device_.is_cpu()) {
      updater_ = std::make_unique<FusedCpuUpdater>(parameters_, settings);
    } else {
      updater_ = std::make_unique<TorchUpdater>(parameters_, settings);
    }
  }

  void begin_micro_step(bool) override { masters_->fold_gradients(); }

  double finish_gradients(double max_norm, double gradient_multiplier) override {
    masters_->fold_gradients();
    if (gradient_multiplier != 1.0) {
      at::NoGradGuard no_grad;
      for (auto& tensor : tensors_) {
        if (tensor.grad().defined()) tensor.mutable_grad().mul_(gradient_multiplier);
      }
    }
    const double limit = max_norm > 0 ? max_norm : std::numeric_limits<double>::infinity();
    return clip_grad_norm(tensors_, limit);
  }

  void optimizer_step(double learning_rate) override {
    updater_->step(learning_rate);
    masters_->zero_gradients();
    masters_->write_back();
  }

  void skip_step() override { masters_->zero_gradients(); }

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
  std::unique_ptr<Updater> updater_;
};

}  // namespace

std::unique_ptr<TrainingEngine> make_single_process_engine(const EngineOptions& options) {
  if (options.offload != Offload::none) {
    throw std::invalid_argument("--offload " + std::string(option_name(options.offload)) +
                                " needs the distributed engine: run under srun --llm-rdzv (or with a rendezvous in the environment)");
  }
  const bool cuda = !options.use_cpu && torch::cuda::is_available();
  return std::make_unique<SingleProcessEngine>(cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
}

}  // namespace llmrdzv::engine
