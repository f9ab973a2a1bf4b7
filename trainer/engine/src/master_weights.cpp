// fp32 master weights for bf16/fp16 training (master_weights.hpp).
#include "llmrdzv/engine/master_weights.hpp"

#include <c10/core/GradMode.h>

#include <stdexcept>

namespace llmrdzv::engine {
namespace {

constexpr const char* kMasterPrefix = "master.";

}  // namespace

MasterWeights::MasterWeights(std::vector<NamedParameter> model_parameters) : model_(std::move(model_parameters)) {
  at::NoGradGuard no_grad;
  for (const NamedParameter& p : model_) {
    const at::ScalarType type = p.tensor.scalar_type();
    if (type != at::kFloat && type != at::kBFloat16 && type != at::kHalf) {
      throw std::invalid_argument("parameter '" + p.name + "' is " + std::string(c10::toString(type)) +
                                  "; training needs float32, bfloat16 or float16 parameters");
    }
    copies_ = copies_ || type != at::kFloat;
  }
  for (const NamedParameter& p : model_) {
    at::Tensor master = copies_ ? p.tensor.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous()
                                : p.tensor;
    masters_.push_back({p.name, master, p.decay});
  }
}

std::vector<at::Tensor> MasterWeights::master_tensors() const {
  std::vector<at::Tensor> tensors;
  for (const NamedParameter& p : masters_) tensors.push_back(p.tensor);
  return tensors;
}

bool MasterWeights::folded_gradients() const {
  if (!copies_) return false;
  for (const NamedParameter& p : masters_) {
    if (p.tensor.grad().defined()) return true;
  }
  return false;
}

void MasterWeights::fold_gradients() {
  if (!copies_) return;
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_.size(); ++i) {
    at::Tensor& grad = model_[i].tensor.mutable_grad();
    if (!grad.defined()) continue;
    at::Tensor& master_grad = masters_[i].tensor.mutable_grad();
    if (master_grad.defined()) {
      master_grad.add_(grad);
    } else {
      master_grad = grad.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
    }
    grad.reset();
  }
}

void MasterWeights::zero_gradients() {
  for (NamedParameter& p : model_) p.tensor.mutable_grad().reset();
  for (NamedParameter& p : masters_) p.tensor.mutable_grad().reset();
}

void MasterWeights::write_back() {
  if (!copies_) return;
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_.size(); ++i) model_[i].tensor.copy_(masters_[i].tensor);
}

void MasterWeights::save(TensorMap& state) const {
  if (!copies_) return;
  for (const NamedParameter& p : masters_) state[kMasterPrefix + p.name] = p.tensor;
}

void MasterWeights::load(TensorMap& state) {
  at::NoGradGuard no_grad;
  for (NamedParameter& p : masters_) {
    const auto found = state.find(kMasterPrefix + p.name);
    if (found == state.end()) continue;  // a checkpoint of an fp32 run: the masters are the loaded model's values
    if (found->second.sizes() != p.tensor.sizes()) {
      throw std::runtime_error("master weights for '" + p.name + "' do not match the parameter's shape");
    }
    p.tensor.copy_(found->second);  // without copies (an fp32 run resuming a bf16 one): the fp32 values themselves
    state.erase(found);
  }
  for (const auto& [name, tensor] : state) {
    if (name.starts_with(kMasterPrefix)) throw std::runtime_error("master weights for '" + name.substr(7) + "', which this model does not have");
  }
  write_back();
}

}  // namespace llmrdzv::engine
