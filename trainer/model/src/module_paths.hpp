// Registers a module at a dotted path ("self_attn.q_proj"), making plain container modules for the
// path's parents as needed, so that a model's parameters carry HF's names whatever its layout.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <string_view>

namespace llmrdzv::model::detail {

// The module at `path` below `root`'s children, made (an empty container) where absent.
inline torch::nn::Module& module_at(torch::nn::Module& root, std::string_view path) {
  torch::nn::Module* at = &root;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string name(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    const auto children = at->named_children();
    if (const auto* child = children.find(name)) {
      at = child->get();
    } else {
      at = at->register_module(name, std::make_shared<torch::nn::Module>()).get();
    }
  }
  return *at;
}

// Registers `module` (a ModuleHolder) as `path` below `root` and returns it.
template <typename Holder>
Holder register_at(torch::nn::Module& root, std::string_view path, Holder module) {
  const std::size_t dot = path.rfind('.');
  torch::nn::Module& parent = dot == std::string_view::npos ? root : module_at(root, path.substr(0, dot));
  return parent.register_module(std::string(dot == std::string_view::npos ? path : path.substr(dot + 1)), module);
}

}  // namespace llmrdzv::model::detail
