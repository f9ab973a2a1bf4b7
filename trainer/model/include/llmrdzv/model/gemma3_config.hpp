// The Gemma 3 text family's hyper-parameters (transformers' Gemma3TextConfig, model_type
// gemma3_text): Gemma 2's keys with q/k norms, no soft-capping by default, five sliding layers to
// one global (sliding_window_pattern, or layer_types) and two rotary settings: the global layers'
// (rope_parameters.full_attention, or the older rope_theta and rope_scaling: LlamaConfig's rope
// fields) and the local layers' (rope_parameters.sliding_attention, or rope_local_base_freq).
// Torch-free.
#pragma once

#include "llmrdzv/model/gemma2_config.hpp"

namespace llmrdzv::model {

struct Gemma3TextConfig : Gemma2Config {
  static constexpr std::string_view kModelType = "gemma3_text";
  std::int64_t sliding_window_pattern = 6;  // every sixth layer global, when layer_types is absent
  double local_rope_theta = 10000.0;
  std::string local_rope_type = "default";  // default or linear
  double local_rope_factor = 1.0;

  Gemma3TextConfig() {
    vocab_size = 262208;
    max_position_embeddings = 131072;
    rope_theta = 1000000.0;
    final_logit_softcapping = std::nullopt;
    attn_logit_softcapping = std::nullopt;
  }
  std::vector<std::string> resolved_layer_types() const;
};

void validate(const Gemma3TextConfig& config, std::string_view origin);
double parameter_count(const Gemma3TextConfig& config);
std::string describe_size(const Gemma3TextConfig& config);
void apply_overrides(Gemma3TextConfig& config, std::string_view overrides);

}  // namespace llmrdzv::model
