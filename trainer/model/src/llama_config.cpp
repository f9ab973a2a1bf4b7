// LlamaConfig's keys (rope_parameters in transformers 5's form, the older top-level rope_theta and
// rope_scaling read too), checks, size and presets.
#include "llmrdzv/model/llama_config.hpp"

#include <algorithm>

#include "config_fields.hpp"
#include "families.hpp"
#include "llama_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<LlamaConfig>> kKeys = detail::llama_keys<LlamaConfig>(
    {{"attention_bias", &LlamaConfig::attention_bias}, {"mlp_bias", &LlamaConfig::mlp_bias}});

bool known_activation(std::string_view name) {
  return name == "silu" || name == "gelu" || name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "relu";
}

}  // namespace

void validate(const LlamaConfig& c, std::string_view origin) {
  using detail::config_fail;
  detail::require_size(origin, "vocab_size", c.vocab_size);
  detail::require_size(origin, "hidden_size", c.hidden_size);
  detail::require_size(origin, "intermediate_size", c.intermediate_size);
  detail::require_size(origin, "num_hidden_layers", c.num_hidden_layers);
  detail::require_size(origin, "num_attention_heads", c.num_attention_heads);
  detail::require_size(origin, "max_position_embeddings", c.max_position_embeddings);
  detail::require_size(origin, "num_key_value_heads", c.kv_heads());
  detail::require_size(origin, "head_dim", c.head_size());
  if (c.num_attention_heads % c.kv_heads() != 0) {
    config_fail(origin, "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                            ") must be a multiple of num_key_value_heads (" + std::to_string(c.kv_heads()) + ")");
  }
  if (c.head_size() % 2 != 0) {
    config_fail(origin, "head_dim (" + std::to_string(c.head_size()) + ") must be even for rotary embeddings");
  }
  if (!(c.rms_norm_eps > 0.0)) config_fail(origin, "rms_norm_eps must be > 0");
  if (!(c.initializer_range >= 0.0)) config_fail(origin, "initializer_range must be >= 0");
  detail::require_probability(origin, "attention_dropout", c.attention_dropout);
  if (!known_activation(c.hidden_act)) {
    config_fail(origin, "hidden_act \"" + c.hidden_act + "\" is not one of silu, gelu, gelu_new, gelu_pytorch_tanh, relu");
  }
  if (!(c.rope_theta > 0.0)) config_fail(origin, "rope_theta must be > 0");
  if (c.rope_type != "default" && c.rope_type != "linear" && c.rope_type != "llama3") {
    config_fail(origin, "rope type \"" + c.rope_type + "\" is not supported (default, linear and llama3 are)");
  }
  if (c.rope_type == "linear" && !(c.rope_factor > 0.0)) config_fail(origin, "the linear rope factor must be > 0");
  if (c.rope_type == "llama3") {
    if (!(c.rope_factor >= 1.0)) config_fail(origin, "the llama3 rope factor must be >= 1");
    if (!(c.rope_low_freq_factor > 0.0 && c.rope_high_freq_factor > c.rope_low_freq_factor)) {
      config_fail(origin, "the llama3 rope needs 0 < low_freq_factor < high_freq_factor");
    }
    detail::require_size(origin, "original_max_position_embeddings", c.rope_original_max_position_embeddings);
  }
  detail::require_token_id(origin, "bos_token_id", c.bos_token_id, c.vocab_size);
  detail::require_token_ids(origin, "eos_token_id", c.eos_token_id, c.vocab_size);
  detail::require_token_id(origin, "pad_token_id", c.pad_token_id, c.vocab_size);
  if (parameter_count(c) > kMaxParameters) config_fail(origin, describe_size(c) + ", more than any machine holds");
}

double parameter_count(const LlamaConfig& c) {
  const double h = static_cast<double>(c.hidden_size), i = static_cast<double>(c.intermediate_size);
  const double q = static_cast<double>(c.num_attention_heads * c.head_size());
  const double kv = static_cast<double>(c.kv_heads() * c.head_size()), v = static_cast<double>(c.vocab_size);
  const double attention = h * q + 2 * h * kv + q * h + (c.attention_bias ? q + 2 * kv + h : 0);
  const double mlp = 3 * h * i + (c.mlp_bias ? 2 * i + h : 0);
  return v * h + static_cast<double>(c.num_hidden_layers) * (attention + mlp + 2 * h) + h +
         (c.tie_word_embeddings ? 0 : v * h);
}

std::string describe_size(const LlamaConfig& c) { return detail::llama_size_text(c, false); }

void apply_overrides(LlamaConfig& config, std::string_view overrides) {
  detail::apply_checked_overrides<LlamaConfig>(config, kKeys, overrides);
}

namespace detail {

void read_rope(LlamaConfig& config, const json::Value& rope, std::string_view origin, std::string_view key) {
  if (rope.is_null()) return;
  if (!rope.is_object()) detail::config_fail(origin, std::string(key) + " must be an object or null");
  const json::Value* type = rope.find("rope_type");
  if (!type) type = rope.find("type");
  if (type) {
    if (!type->is_string()) detail::config_fail(origin, std::string(key) + ".rope_type must be a string");
    config.rope_type = type->as_string();
  }
  const auto number = [&](std::string_view name, double& field) {
    const json::Value* value = rope.find(name);
    if (!value) {
      if (config.rope_type == "llama3" && name != "rope_theta") {
        detail::config_fail(origin, std::string(key) + " has no \"" + std::string(name) + "\", which rope type llama3 needs");
      }
      return;
    }
    if (!value->is_number()) detail::config_fail(origin, std::string(key) + "." + std::string(name) + " must be a number");
    field = value->as_double();
  };
  number("rope_theta", config.rope_theta);
  number("factor", config.rope_factor);
  if (config.rope_type != "llama3") return;
  number("low_freq_factor", config.rope_low_freq_factor);
  number("high_freq_factor", config.rope_high_freq_factor);
  const json::Value* original = rope.find("original_max_position_embeddings");
  if (!original) {
    detail::config_fail(origin, std::string(key) + " has no \"original_max_position_embeddings\", which rope type llama3 needs");
  }
  if (!original->is_integer()) {
    detail::config_fail(origin, std::string(key) + ".original_max_position_embeddings must be an integer");
  }
  config.rope_original_max_position_embeddings = original->as_integer();
}

LlamaConfig llama_from_json(const json::Value& doc, std::string_view origin) {
  LlamaConfig config;
  read_keys<LlamaConfig>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  return config;
}

void write_json(const LlamaConfig& config, json::Object& doc) {
  write_llama_keys<LlamaConfig>(config, kKeys, "LlamaForCausalLM", doc);
}

void read_llama_rope(LlamaConfig& config, const json::Value& doc, std::string_view origin) {
  if (const json::Value* scaling = doc.find("rope_scaling")) read_rope(config, *scaling, origin, "rope_scaling");
  if (const json::Value* rope = doc.find("rope_parameters")) read_rope(config, *rope, origin, "rope_parameters");
  if (const json::Value* tp = doc.find("pretraining_tp"); tp && !(tp->is_integer() && tp->as_integer() == 1)) {
    config_fail(origin, "pretraining_tp must be 1 (the tensor-parallel slicing of pretraining is not supported)");
  }
}

void read_layer_types(std::vector<std::string>& types, const json::Value& doc, std::string_view origin) {
  const json::Value* given = doc.find("layer_types");
  if (!given || given->is_null()) return;
  if (!given->is_array()) config_fail(origin, "layer_types must be a list of strings or null");
  types.clear();
  for (const json::Value& type : given->as_array()) {
    if (!type.is_string()) config_fail(origin, "layer_types must be a list of strings or null");
    types.push_back(type.as_string());
  }
}

void validate_layer_types(const std::vector<std::string>& types, std::int64_t layers, std::string_view origin) {
  if (types.empty()) return;
  if (static_cast<std::int64_t>(types.size()) != layers) {
    config_fail(origin, "layer_types has " + std::to_string(types.size()) + " entries for " + std::to_string(layers) +
                            " layers (num_hidden_layers)");
  }
  for (const std::string& type : types) {
    if (type != kFullAttention && type != kSlidingAttention) {
      config_fail(origin, "layer type \"" + type + "\" is not supported (full_attention and sliding_attention are)");
    }
  }
}

json::Value layer_types_json(const std::vector<std::string>& types) {
  json::Array list;
  for (const std::string& type : types) list.emplace_back(type);
  return json::Value(std::move(list));
}

json::Value rope_parameters_json(const LlamaConfig& config) {
  json::Object rope{{"rope_theta", json::Value(config.rope_theta)}, {"rope_type", json::Value(config.rope_type)}};
  if (config.rope_type != "default") rope.emplace_back("factor", json::Value(config.rope_factor));
  if (config.rope_type == "llama3") {
    rope.emplace_back("low_freq_factor", json::Value(config.rope_low_freq_factor));
    rope.emplace_back("high_freq_factor", json::Value(config.rope_high_freq_factor));
    rope.emplace_back("original_max_position_embeddings", json::Value(config.rope_original_max_position_embeddings));
  }
  return json::Value(std::move(rope));
}

std::optional<LlamaConfig> llama_preset(std::string_view name) {
  struct Shape {
    std::string_view name;
    std::int64_t layers, heads, kv_heads, hidden, intermediate, vocab, positions;
    bool tied;
    std::int64_t bos, eos;
  };
  static constexpr Shape kShapes[] = {{"smollm-135m", 30, 9, 3, 576, 1536, 49152, 2048, true, 0, 0},
                                      {"tinyllama-1.1b", 22, 32, 4, 2048, 5632, 32000, 2048, false, 1, 2},
                                      {"llama-2-7b", 32, 32, 32, 4096, 11008, 32000, 4096, false, 1, 2},
                                      {"llama-2-13b", 40, 40, 40, 5120, 13824, 32000, 4096, false, 1, 2}};
  for (const Shape& s : kShapes) {
    if (s.name != name) continue;
    LlamaConfig c;
    c.num_hidden_layers = s.layers;
    c.num_attention_heads = s.heads;
    c.num_key_value_heads = s.kv_heads;
    c.hidden_size = s.hidden;
    c.intermediate_size = s.intermediate;
    c.vocab_size = s.vocab;
    c.max_position_embeddings = s.positions;
    c.tie_word_embeddings = s.tied;
    c.bos_token_id = s.bos;
    c.eos_token_id = {s.eos};
    c.rms_norm_eps = 1e-5;
    return c;
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace llmrdzv::model
