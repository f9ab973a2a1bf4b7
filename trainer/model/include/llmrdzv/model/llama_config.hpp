// The Llama family's hyper-parameters with transformers' LlamaConfig key names and defaults
// (config.json and --config_overrides go through model_config.hpp). Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmrdzv/model/config_error.hpp"
#include "llmrdzv/model/token_ids.hpp"

namespace llmrdzv::model {

struct LlamaConfig {
  static constexpr std::string_view kModelType = "llama";
  std::int64_t vocab_size = 32000;
  std::int64_t hidden_size = 4096;
  std::int64_t intermediate_size = 11008;
  std::int64_t num_hidden_layers = 32;
  std::int64_t num_attention_heads = 32;
  // Grouped-query attention: heads share key/value heads in groups; HF's null means one per head.
  std::optional<std::int64_t> num_key_value_heads;
  std::optional<std::int64_t> head_dim;  // null: hidden_size / num_attention_heads
  std::string hidden_act = "silu";
  std::int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  double attention_dropout = 0.0;
  std::optional<std::int64_t> pad_token_id;
  std::int64_t bos_token_id = 1;
  TokenIds eos_token_id{2};  // one id or several (generation stops at any)
  // Rotary embeddings (config.json's rope_parameters, or the older top-level rope_theta and
  // rope_scaling): "default"; "linear" (positions divided by rope_factor); or "llama3" (Llama 3.1's:
  // frequencies whose wavelength exceeds original_max_position_embeddings / low_freq_factor are
  // divided by rope_factor, those under original / high_freq_factor kept, those between blended).
  // Other rope types (dynamic, yarn, longrope) are refused by name.
  double rope_theta = 10000.0;
  std::string rope_type = "default";
  double rope_factor = 1.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  std::int64_t rope_original_max_position_embeddings = 8192;

  std::int64_t kv_heads() const { return num_key_value_heads ? *num_key_value_heads : num_attention_heads; }
  std::int64_t head_size() const { return head_dim ? *head_dim : hidden_size / num_attention_heads; }
};

void validate(const LlamaConfig& config, std::string_view origin);
double parameter_count(const LlamaConfig& config);
std::string describe_size(const LlamaConfig& config);
void apply_overrides(LlamaConfig& config, std::string_view overrides);

}  // namespace llmrdzv::model
