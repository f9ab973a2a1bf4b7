// The Mistral family's hyper-parameters (transformers' MistralConfig): Llama's keys without its
// biases, and sliding_window (every layer attends to itself and the window - 1 positions before;
// null: all of them). Torch-free.
#pragma once

#include "llmrdzv/model/llama_config.hpp"

namespace llmrdzv::model {

struct MistralConfig : LlamaConfig {
  static constexpr std::string_view kModelType = "mistral";
  std::optional<std::int64_t> sliding_window = 4096;

  MistralConfig() {
    intermediate_size = 14336;
    num_key_value_heads = 8;
    max_position_embeddings = 4096 * 32;
  }
};

void validate(const MistralConfig& config, std::string_view origin);
void apply_overrides(MistralConfig& config, std::string_view overrides);

}  // namespace llmrdzv::model
