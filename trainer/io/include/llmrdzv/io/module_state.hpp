// A module's parameters and buffers as named tensors and back, strictly: what checkpoints store
// for the model (in torch layout, unlike hf_model_dir.hpp's HF layout) and restore on resume.
#pragma once

#include <stdexcept>
#include <string>

#include <torch/nn/module.h>

#include "llmrdzv/io/safetensors_torch.hpp"

namespace llmrdzv::io {

class StateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// named_parameters() then named_buffers(), detached views sharing the module's storage (saving
// copies them to the CPU; clone them if the module changes before they are written).
NamedTensors module_state(const torch::nn::Module& module);

// Copies every tensor into the parameter or buffer of the same name (dtype and device converted).
// Throws StateError, starting with `origin`, when a name is missing, unexpected or duplicated, or a
// shape differs; the module is not modified unless every check passes.
void load_module_state(torch::nn::Module& module, const NamedTensors& state, const std::string& origin);

}  // namespace llmrdzv::io
