// The AdamW updaters of adamw_updaters.hpp.
#include "llmrdzv/engine/adamw_updaters.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "llmrdzv/optim/fused_adamw.hpp"

namespace llmrdzv::engine {
namespace {

class CpuAdamW final : public AdamWUpdater {
 public:
  CpuAdamW(const std::vector<NamedParameter>& parameters, const AdamWSettings& s) : parameters_(parameters) {
    for (const auto& p : parameters_) {
      if (p.tensor.scalar_type() != at::kFloat || !p.tensor.is_contiguous() || !p.tensor.is_cpu()) {
        throw std::invalid_argument("the fused CPU AdamW needs contiguous fp32 CPU parameters ('" + p.name + "' is not)");
      }
      states_.push_back({at::zeros_like(p.tensor), at::zeros_like(p.tensor), 0});
    }
    decay_ = {0.0, s.beta1, s.beta2, s.epsilon, s.weight_decay};
    no_decay_ = decay_;
    no_decay_.weight_decay = 0;
  }

  void step(double learning_rate, double grad_scale) override {
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
      hp.grad_scale = grad_scale;
      const auto n = static_cast<std::size_t>(param.numel());
      optim::adamw_step({{param.data_ptr<float>(), n},
                         {dense.data_ptr<float>(), n},
                         {state.exp_avg.data_ptr<float>(), n},
                         {state.exp_avg_sq.data_ptr<float>(), n}},
                        hp, ++state.step, kernel_options);
    }
  }

  std::optional<MomentState> get(const NamedParameter& p) const override {
    const MomentState& state = states_[parameter_index(parameters_, p)];
    if (state.step == 0) return std::nullopt;
    return state;
  }

  // The kernel reads the moments as flat arrays: loaded ones are made contiguous.
  void set(const NamedParameter& p, MomentState state) override {
    states_[parameter_index(parameters_, p)] = {state.exp_avg.contiguous(), state.exp_avg_sq.contiguous(), state.step};
  }

 private:
  std::vector<NamedParameter> parameters_;
  std::vector<MomentState> states_;
  optim::AdamWHyperparams decay_;
  optim::AdamWHyperparams no_decay_;
};

class MultiTensorAdamW final : public AdamWUpdater {
 public:
  MultiTensorAdamW(const std::vector<NamedParameter>& parameters, const AdamWSettings& s)
      : parameters_(parameters), settings_(s) {
    for (const auto& p : parameters_) {
      if (!at::isFloatingType(p.tensor.scalar_type())) {
        throw std::invalid_argument("AdamW needs floating-point parameters ('" + p.name + "' is not)");
      }
      states_.push_back({at::zeros_like(p.tensor), at::zeros_like(p.tensor), 0});
      // The kernel reads the step count from a float tensor on the parameter's device; the
      // int64 copy answers get() without waiting for the device.
      device_steps_.push_back(at::zeros({}, p.tensor.options().dtype(at::kFloat)));
    }
  }

  void step(double learning_rate, double grad_scale) override {
    for (const bool decay : {true, false}) {
      std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
      for (std::size_t i = 0; i < parameters_.size(); ++i) {
        const at::Tensor& param = parameters_[i].tensor;
        if (parameters_[i].decay != decay || !param.grad().defined()) continue;
        params.push_back(param);
        grads.push_back(param.grad());
        exp_avgs.push_back(states_[i].exp_avg);
        exp_avg_sqs.push_back(states_[i].exp_avg_sq);
        steps.push_back(device_steps_[i]);
        ++states_[i].step;
      }
      if (params.empty()) continue;
      if (grad_scale != 1.0) at::_foreach_mul_(grads, grad_scale);
      at::_foreach_add_(steps, 1);  // torch.optim.AdamW(fused=True) counts the step first, too
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, learning_rate, settings_.beta1,
                        settings_.beta2, decay ? settings_.weight_decay : 0.0, settings_.epsilon,
                        /*amsgrad=*/false, /*maximize=*/false);
    }
  }

  std::optional<MomentState> get(const NamedParameter& p) const override {
    const MomentState& state = states_[parameter_index(parameters_, p)];
    if (state.step == 0) return std::nullopt;
    return state;
  }

  void set(const NamedParameter& p, MomentState state) override {
    const std::size_t i = parameter_index(parameters_, p);
    device_steps_[i].fill_(static_cast<double>(state.step));
    states_[i] = std::move(state);
  }

 private:
  std::vector<NamedParameter> parameters_;
  AdamWSettings settings_;
  std::vector<MomentState> states_;
  std::vector<at::Tensor> device_steps_;
};

}  // namespace

std::size_t parameter_index(const std::vector<NamedParameter>& parameters, const NamedParameter& p) {
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i].tensor.is_same(p.tensor)) return i;
  }
  throw std::logic_error("unknown parameter " + p.name);
}

std::unique_ptr<AdamWUpdater> make_cpu_adamw(const std::vector<NamedParameter>& parameters, const AdamWSettings& s) {
  return std::make_unique<CpuAdamW>(parameters, s);
}

std::unique_ptr<AdamWUpdater> make_multi_tensor_adamw(const std::vector<NamedParameter>& parameters,
                                                      const AdamWSettings& s) {
  return std::make_unique<MultiTensorAdamW>(parameters, s);
}

std::unique_ptr<AdamWUpdater> make_adamw(const std::vector<NamedParameter>& parameters, const AdamWSettings& s) {
  const bool cpu = parameters.empty() || parameters.front().tensor.is_cpu();
  return cpu ? make_cpu_adamw(parameters, s) : make_multi_tensor_adamw(parameters, s);
}

}  // namespace llmrdzv::engine
