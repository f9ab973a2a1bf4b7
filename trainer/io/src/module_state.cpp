// Strict name-by-name state transfer between a torch::nn::Module and named tensors.
#include "llmrdzv/io/module_state.hpp"

#include <map>

namespace llmrdzv::io {
namespace {

std::map<std::string, at::Tensor> targets(torch::nn::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (auto& p : module.named_parameters()) out.emplace(p.key(), p.value());
  for (auto& b : module.named_buffers()) out.emplace(b.key(), b.value());
  return out;
}

}  // namespace

NamedTensors module_state(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& p : module.named_parameters()) out.emplace_back(p.key(), p.value().detach());
  for (const auto& b : module.named_buffers()) out.emplace_back(b.key(), b.value().detach());
  return out;
}

void load_module_state(torch::nn::Module& module, const NamedTensors& state, const std::string& origin) {
  std::map<std::string, at::Tensor> dest = targets(module);
  std::map<std::string, const at::Tensor*> source;
  for (const auto& [name, tensor] : state) {
    const auto it = dest.find(name);
    if (it == dest.end()) throw StateError(origin + ": unexpected tensor \"" + name + "\"");
    if (!source.emplace(name, &tensor).second) throw StateError(origin + ": tensor \"" + name + "\" given twice");
    if (tensor.sizes() != it->second.sizes()) {
      throw StateError(origin + ": tensor \"" + name + "\" has shape " + c10::str(tensor.sizes()) + ", the model's is " +
                       c10::str(it->second.sizes()));
    }
  }
  for (const auto& [name, tensor] : dest) {
    if (!source.count(name)) throw StateError(origin + ": missing tensor \"" + name + "\"");
  }
  at::NoGradGuard no_grad;
  for (auto& [name, tensor] : dest) tensor.copy_(*source.at(name));
}

}  // namespace llmrdzv::io
