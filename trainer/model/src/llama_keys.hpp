// The config.json keys Llama shares with the families built on its maths (Mistral, Qwen2, Qwen3),
// and their rotary settings (rope_parameters, or the older rope_theta and rope_scaling) read and
// written once for all of them.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "config_fields.hpp"

namespace llmrdzv::model::detail {

// The shared keys plus a family's own, in config.json's (alphabetical) order. rope_theta is here
// for --config_overrides and for configs written before rope_parameters; it is written inside
// rope_parameters.
template <typename Config>
std::vector<ConfigKey<Config>> llama_keys(std::initializer_list<ConfigKey<Config>> own) {
  std::vector<ConfigKey<Config>> keys = {
      {"attention_dropout", &Config::attention_dropout},
      {"bos_token_id", &Config::bos_token_id},
      {"eos_token_id", &Config::eos_token_id},
      {"head_dim", &Config::head_dim},
      {"hidden_act", &Config::hidden_act},
      {"hidden_size", &Config::hidden_size},
      {"initializer_range", &Config::initializer_range},
      {"intermediate_size", &Config::intermediate_size},
      {"max_position_embeddings", &Config::max_position_embeddings},
      {"num_attention_heads", &Config::num_attention_heads},
      {"num_hidden_layers", &Config::num_hidden_layers},
      {"num_key_value_heads", &Config::num_key_value_heads},
      {"pad_token_id", &Config::pad_token_id},
      {"rms_norm_eps", &Config::rms_norm_eps},
      {"rope_theta", &Config::rope_theta},
      {"tie_word_embeddings", &Config::tie_word_embeddings},
      {"vocab_size", &Config::vocab_size},
  };
  keys.insert(keys.end(), own);
  std::ranges::sort(keys, {}, &ConfigKey<Config>::name);
  return keys;
}

// One rotary object of config.json, named `key` in errors: rope_parameters {"rope_type",
// "rope_theta", "factor", and llama3's "low_freq_factor", "high_freq_factor",
// "original_max_position_embeddings"}, or the older rope_scaling {"type" or "rope_type", ...}; null
// changes nothing. llama3 needs all of its keys, as transformers does.
void read_rope(LlamaConfig& config, const json::Value& rope, std::string_view origin, std::string_view key);

// rope_scaling / rope_parameters and pretraining_tp from config.json (types checked, llama3's keys
// required); the table's keys are read by read_keys.
void read_llama_rope(LlamaConfig& config, const json::Value& doc, std::string_view origin);

// architectures, model_type, the table's keys (num_key_value_heads and head_dim resolved, as
// transformers writes them) and rope_parameters.
template <typename Config>
void write_llama_keys(const Config& config, std::span<const ConfigKey<Config>> keys, std::string_view architecture,
                      json::Object& doc);

// layer_types (Qwen2, Qwen3, Gemma 2): a list of strings (or null: left empty) from config.json;
// checked to have one entry per layer, each full_attention or sliding_attention; written back.
void read_layer_types(std::vector<std::string>& types, const json::Value& doc, std::string_view origin);
void validate_layer_types(const std::vector<std::string>& types, std::int64_t layers, std::string_view origin);
json::Value layer_types_json(const std::vector<std::string>& types);
inline constexpr std::string_view kFullAttention = "full_attention", kSlidingAttention = "sliding_attention";

// describe_size of the Llama-built families: layers, widths (head_dim where the family sets its
// own), vocabulary and the parameters they imply.
template <typename Config>
std::string llama_size_text(const Config& c, bool with_head_dim) {
  return "num_hidden_layers=" + std::to_string(c.num_hidden_layers) + ", hidden_size=" + std::to_string(c.hidden_size) +
         (with_head_dim ? ", head_dim=" + std::to_string(c.head_size()) : std::string()) +
         ", intermediate_size=" + std::to_string(c.intermediate_size) + ", vocab_size=" + std::to_string(c.vocab_size) +
         imply_parameters(parameter_count(c));
}

// rope_parameters from the config (rope_theta, rope_type and the type's factors).
json::Value rope_parameters_json(const LlamaConfig& config);

template <typename Config>
void write_llama_keys(const Config& config, std::span<const ConfigKey<Config>> keys, std::string_view architecture,
                      json::Object& doc) {
  doc.emplace_back("architectures", json::Array{json::Value(std::string(architecture))});
  doc.emplace_back("model_type", json::Value(std::string(Config::kModelType)));
  Config written = config;
  written.num_key_value_heads = config.kv_heads();
  written.head_dim = config.head_size();
  write_keys<Config>(written, keys, doc);
  std::erase_if(doc, [](const auto& entry) { return entry.first == "rope_theta"; });
  doc.emplace_back("rope_parameters", rope_parameters_json(config));
}

}  // namespace llmrdzv::model::detail
