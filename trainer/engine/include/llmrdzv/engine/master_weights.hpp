// Mixed precision's fp32 master weights. The model computes with bf16 or fp16 parameters and
// gradients; the optimizer updates fp32 copies of them (masters()), whose gradients are summed in
// fp32, and each step's new values are rounded back into the model. With fp32 parameters no copy
// is made: the masters are the parameters themselves. Checkpoints keep the masters
// ("master.<name>"), so a resumed run continues from the fp32 values, not the rounded ones.
#pragma once

#include <vector>

#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::engine {

class MasterWeights {
 public:
  // Throws std::invalid_argument for a parameter that is not fp32, bf16 or fp16.
  explicit MasterWeights(std::vector<NamedParameter> model_parameters);

  // True when the model's parameters are bf16/fp16 and masters() are fp32 copies.
  bool copies() const { return copies_; }
  // What the optimizer updates: same names and decay flags as the model's, always fp32.
  const std::vector<NamedParameter>& masters() const { return masters_; }
  std::vector<at::Tensor> master_tensors() const;
  // The model's own parameters, in the masters' order.
  const std::vector<NamedParameter>& model() const { return model_; }
  // True when fold_gradients() has moved gradients into the masters since the last zero_gradients().
  bool folded_gradients() const;

  // With copies: adds each model gradient to its master's fp32 gradient and drops the model's,
  // so gradients accumulate over micro-batches in fp32 (call before each micro-batch's backward
  // and once after the last). Without copies: nothing (autograd accumulates in fp32 already).
  void fold_gradients();
  // Drops every gradient, the model's and the masters'.
  void zero_gradients();
  // With copies: the masters' values, rounded, into the model's parameters.
  void write_back();

  // With copies: adds "master.<name>" entries to `state`. load() takes them out of `state` again
  // (a checkpoint from an fp32 run has none: the masters are then taken from the model), and
  // throws std::runtime_error for an entry of the wrong shape or an unknown name.
  void save(TensorMap& state) const;
  void load(TensorMap& state);

 private:
  std::vector<NamedParameter> model_;
  std::vector<NamedParameter> masters_;
  bool copies_ = false;
};

}  // namespace llmrdzv::engine
