// Gemma 3's text model (HF's Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's layers with
// (1 + weight) RMSNorms over each head of q and k before rotary, no soft-capping unless the config
// asks, five local (sliding-window) layers to one global, and the local layers' own rotary base
// (rope_parameters.sliding_attention, or rope_local_base_freq) beside the global layers' (which may
// be scaled); its config.json keys, checks and presets.
#include <cmath>

#include "family_recipes.hpp"
#include "families.hpp"
#include "gemma_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<Gemma3TextConfig>> kKeys = detail::gemma_keys<Gemma3TextConfig>(
    {{"rope_local_base_freq", &Gemma3TextConfig::local_rope_theta},
     {"sliding_window_pattern", &Gemma3TextConfig::sliding_window_pattern}});

// The local layers' rotary settings as a LlamaConfig's, for the shared reader and writer.
LlamaConfig local_rope(const Gemma3TextConfig& c) {
  LlamaConfig local;
  local.rope_theta = c.local_rope_theta;
  local.rope_type = c.local_rope_type;
  local.rope_factor = c.local_rope_factor;
  return local;
}

}  // namespace

std::vector<std::string> Gemma3TextConfig::resolved_layer_types() const {
  if (!layer_types.empty()) return layer_types;
  std::vector<std::string> types;
  for (std::int64_t i = 0; i < num_hidden_layers; ++i) {
    types.emplace_back((i + 1) % sliding_window_pattern ? detail::kSlidingAttention : detail::kFullAttention);
  }
  return types;
}

void validate(const Gemma3TextConfig& c, std::string_view origin) {
  validate(static_cast<const Gemma2Config&>(c), origin);
  detail::require_size(origin, "sliding_window_pattern", c.sliding_window_pattern);
  if (!(c.local_rope_theta > 0.0)) detail::config_fail(origin, "the sliding layers' rope_theta must be > 0");
  if (c.local_rope_type != "default" && c.local_rope_type != "linear") {
    detail::config_fail(origin, "rope type \"" + c.local_rope_type +
                                    "\" of the sliding layers is not supported (default and linear are)");
  }
  if (c.local_rope_type == "linear" && !(c.local_rope_factor > 0.0)) {
    detail::config_fail(origin, "the sliding layers' linear rope factor must be > 0");
  }
}

double parameter_count(const Gemma3TextConfig& c) {
  return parameter_count(static_cast<const Gemma2Config&>(c)) +
         static_cast<double>(c.num_hidden_layers) * 2.0 * static_cast<double>(c.head_size());
}

std::string describe_size(const Gemma3TextConfig& c) { return detail::llama_size_text(c, true); }

void apply_overrides(Gemma3TextConfig& config, std::string_view overrides) {
  detail::apply_checked_overrides<Gemma3TextConfig>(config, kKeys, overrides);
}

namespace detail {

Gemma3TextConfig gemma3_text_from_json(const json::Value& doc, std::string_view origin) {
  Gemma3TextConfig config;
  read_keys<Gemma3TextConfig>(config, kKeys, doc, origin);
  // rope_scaling (older configs) scales the global layers only, as transformers applies it.
  if (const json::Value* scaling = doc.find("rope_scaling")) read_rope(config, *scaling, origin, "rope_scaling");
  if (const json::Value* rope = doc.find("rope_parameters"); rope && !rope->is_null()) {
    const json::Value* global = rope->is_object() ? rope->find("full_attention") : nullptr;
    const json::Value* local = rope->is_object() ? rope->find("sliding_attention") : nullptr;
    if (!global && !local) {
      config_fail(origin, "rope_parameters must be an object of full_attention and sliding_attention settings");
    }
    if (global) read_rope(config, *global, origin, "rope_parameters.full_attention");
    if (local) {
      LlamaConfig settings = local_rope(config);
      read_rope(settings, *local, origin, "rope_parameters.sliding_attention");
      config.local_rope_theta = settings.rope_theta;
      config.local_rope_type = settings.rope_type;
      config.local_rope_factor = settings.rope_factor;
    }
  }
  read_layer_types(config.layer_types, doc, origin);
  refuse_bidirectional_attention(doc, origin);
  return config;
}

// As transformers 5 writes it: rope_parameters per layer type, and layer_types spelled out.
void write_json(const Gemma3TextConfig& config, json::Object& doc) {
  write_llama_keys<Gemma3TextConfig>(config, kKeys, "Gemma3ForCausalLM", doc);
  std::erase_if(doc, [](const auto& entry) {
    return entry.first == "rope_parameters" || entry.first == "rope_local_base_freq" ||
           entry.first == "sliding_window_pattern";
  });
  doc.emplace_back("rope_parameters", json::Value(json::Object{{"full_attention", rope_parameters_json(config)},
                                                               {"sliding_attention", rope_parameters_json(local_rope(config))}}));
  doc.emplace_back("layer_types", layer_types_json(config.resolved_layer_types()));
}

// google/gemma-3-1b-pt.
std::optional<Gemma3TextConfig> gemma3_text_preset(std::string_view name) {
  if (name != "gemma-3-1b") return std::nullopt;
  Gemma3TextConfig c;
  c.vocab_size = 262144;
  c.hidden_size = 1152;
  c.intermediate_size = 6912;
  c.num_hidden_layers = 26;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 1;
  c.max_position_embeddings = 32768;
  c.sliding_window = 512;
  return c;
}

DecoderRecipe decoder_recipe(const Gemma3TextConfig& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const Gemma2Config&>(c));
  r.model_type = Gemma3TextConfig::kModelType;
  r.qk_norm = true;
  r.names.q_norm = "self_attn.q_norm";
  r.names.k_norm = "self_attn.k_norm";
  const RopeChoice local{.theta = c.local_rope_theta, .type = c.local_rope_type, .factor = c.local_rope_factor};
  const std::vector<std::string> types = c.resolved_layer_types();
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const bool sliding = types[i] == kSlidingAttention;
    r.layers[i].sliding_window = sliding ? c.sliding_window : std::nullopt;
    r.layers[i].rope = sliding ? std::optional<RopeChoice>(local) : std::nullopt;
  }
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
