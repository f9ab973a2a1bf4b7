// A custom autograd Function that stores only a block's input and recomputes the block in
// backward (reentrant backward, as PyTorch's reentrant checkpoint does).
#include "block_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

namespace llmrdzv::model::detail {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Generator default_generator(const at::Device& device) { return at::globalContext().defaultGenerator(device); }

at::Tensor rng_state(const at::Device& device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(const at::Device& device, const at::Tensor& state) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Autocast settings of one device type, captured in forward and re-applied while recomputing.
struct AutocastState {
  bool enabled;
  at::ScalarType dtype;

  static AutocastState current(at::DeviceType type) {
    return {at::autocast::is_autocast_enabled(type), at::autocast::get_autocast_dtype(type)};
  }
  void apply(at::DeviceType type) const {
    at::autocast::set_autocast_enabled(type, enabled);
    at::autocast::set_autocast_dtype(type, dtype);
  }
};

struct BlockRecompute : public torch::autograd::Function<BlockRecompute> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& hidden, DecoderBlockImpl* block) {
    const at::Device device = hidden.device();
    const AutocastState autocast = AutocastState::current(device.type());
    ctx->save_for_backward({hidden});
    ctx->saved_data["rng_state"] = rng_state(device);
    // The block outlives the graph built from it (the model owns it); the Function API keeps only
    // IValues, so the pointer travels as an integer.
    ctx->saved_data["block"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(block));
    ctx->saved_data["autocast_enabled"] = autocast.enabled;
    ctx->saved_data["autocast_dtype"] = autocast.dtype;
    return block->forward(hidden);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor saved = ctx->get_saved_variables()[0];
    auto* block = reinterpret_cast<DecoderBlockImpl*>(static_cast<std::intptr_t>(ctx->saved_data["block"].toInt()));
    const at::Device device = saved.device();
    const AutocastState recorded{ctx->saved_data["autocast_enabled"].toBool(),
                                 ctx->saved_data["autocast_dtype"].toScalarType()};

    const at::Tensor rng_now = rng_state(device);
    const AutocastState autocast_now = AutocastState::current(device.type());
    set_rng_state(device, ctx->saved_data["rng_state"].toTensor());
    recorded.apply(device.type());
    at::Tensor input = saved.detach().requires_grad_(true);
    at::Tensor output;
    {
      at::AutoGradMode enable_grad(true);
      output = block->forward(input);
    }
    autocast_now.apply(device.type());
    set_rng_state(device, rng_now);

    torch::autograd::backward({output}, {grad_outputs[0]});
    return {input.grad(), at::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_block_forward(DecoderBlockImpl& block, const torch::Tensor& hidden) {
  if (!at::GradMode::is_enabled() || !hidden.requires_grad()) return block.forward(hidden);
  return BlockRecompute::apply(hidden, &block);
}

}  // namespace llmrdzv::model::detail
