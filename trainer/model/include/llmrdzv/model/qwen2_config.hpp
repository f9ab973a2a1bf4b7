// The Qwen2 family's hyper-parameters (transformers' Qwen2Config, Qwen2 and Qwen2.5): Llama's keys
// without its bias switches (q, k and v always have biases, o and the MLP none), and sliding-window
// attention on the layers layer_types names "sliding_attention" (by default those from
// max_window_layers on, where use_sliding_window is true). Torch-free.
#pragma once

#include <vector>

#include "llmrdzv/model/llama_config.hpp"

namespace llmrdzv::model {

struct Qwen2Config : LlamaConfig {
  static constexpr std::string_view kModelType = "qwen2";
  bool use_sliding_window = false;
  std::optional<std::int64_t> sliding_window = 4096;
  std::int64_t max_window_layers = 28;
  // "full_attention" or "sliding_attention" per layer; empty: as transformers derives them.
  std::vector<std::string> layer_types;

  Qwen2Config() {
    vocab_size = 151936;
    intermediate_size = 22016;
    max_position_embeddings = 32768;
    bos_token_id = 151643;
    eos_token_id = {151643};
  }
  // The window of layer i: sliding_window on sliding layers where use_sliding_window is true.
  std::optional<std::int64_t> window_of(std::int64_t layer) const;
  // layer_types as given, or as transformers derives them.
  std::vector<std::string> resolved_layer_types() const;
};

void validate(const Qwen2Config& config, std::string_view origin);
double parameter_count(const Qwen2Config& config);
std::string describe_size(const Qwen2Config& config);
void apply_overrides(Qwen2Config& config, std::string_view overrides);

}  // namespace llmrdzv::model
