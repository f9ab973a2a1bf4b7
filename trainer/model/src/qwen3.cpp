// Qwen3 (HF's Qwen3ForCausalLM): Qwen2's layers and windows with RMSNorm over each head of q and k
// (self_attn.q_norm, k_norm) before rotary, head_dim of its own, biases only where attention_bias
// says; its config.json keys, checks and presets.
#include "family_recipes.hpp"
#include "families.hpp"
#include "llama_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<Qwen3Config>> kKeys =
    detail::llama_keys<Qwen3Config>({{"attention_bias", &Qwen3Config::attention_bias},
                                     {"max_window_layers", &Qwen3Config::max_window_layers},
                                     {"sliding_window", &Qwen3Config::sliding_window},
                                     {"use_sliding_window", &Qwen3Config::use_sliding_window}});

}  // namespace

void validate(const Qwen3Config& c, std::string_view origin) { validate(static_cast<const Qwen2Config&>(c), origin); }

double parameter_count(const Qwen3Config& c) {
  return parameter_count(static_cast<const LlamaConfig&>(c)) +
         static_cast<double>(c.num_hidden_layers) * 2.0 * static_cast<double>(c.head_size());
}

std::string describe_size(const Qwen3Config& c) { return detail::llama_size_text(c, true); }

void apply_overrides(Qwen3Config& config, std::string_view overrides) {
  detail::apply_checked_overrides<Qwen3Config>(config, kKeys, overrides);
}

namespace detail {

Qwen3Config qwen3_from_json(const json::Value& doc, std::string_view origin) {
  Qwen3Config config;
  read_keys<Qwen3Config>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  read_layer_types(config.layer_types, doc, origin);
  return config;
}

void write_json(const Qwen3Config& config, json::Object& doc) {
  write_llama_keys<Qwen3Config>(config, kKeys, "Qwen3ForCausalLM", doc);
  doc.emplace_back("layer_types", layer_types_json(config.resolved_layer_types()));
}

// Qwen/Qwen3-0.6B and Qwen/Qwen3-8B.
std::optional<Qwen3Config> qwen3_preset(std::string_view name) {
  Qwen3Config c;
  c.rope_theta = 1000000.0;
  c.max_position_embeddings = 40960;
  c.eos_token_id = {151645};
  if (name == "qwen3-0.6b") {
    c.num_hidden_layers = 28, c.num_attention_heads = 16, c.num_key_value_heads = 8;
    c.hidden_size = 1024, c.intermediate_size = 3072, c.tie_word_embeddings = true, c.max_window_layers = 28;
    return c;
  }
  if (name == "qwen3-8b") {
    c.num_hidden_layers = 36, c.num_attention_heads = 32, c.num_key_value_heads = 8;
    c.hidden_size = 4096, c.intermediate_size = 12288, c.max_window_layers = 36;
    return c;
  }
  return std::nullopt;
}

DecoderRecipe decoder_recipe(const Qwen3Config& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const Qwen2Config&>(c));
  r.model_type = Qwen3Config::kModelType;
  r.q_bias = r.k_bias = r.v_bias = r.o_bias = c.attention_bias;
  r.qk_norm = true;
  r.names.q_norm = "self_attn.q_norm";
  r.names.k_norm = "self_attn.k_norm";
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
