// Gemma 2 (HF's Gemma2ForCausalLM): RMSNorm times (1 + weight) before and after both attention and
// the MLP, embeddings scaled by sqrt(hidden_size), a GeGLU MLP (tanh GELU), the softmax scale
// query_pre_attn_scalar^-1/2, attention scores and final logits soft-capped, sliding and global
// layers alternating, a tied head; its config.json keys, checks and presets. Bidirectional
// attention is refused by name.
#include <cmath>

#include "family_recipes.hpp"
#include "families.hpp"
#include "gemma_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<Gemma2Config>> kKeys = detail::gemma_keys<Gemma2Config>({});

}  // namespace

std::vector<std::string> Gemma2Config::resolved_layer_types() const {
  if (!layer_types.empty()) return layer_types;
  std::vector<std::string> types;
  for (std::int64_t i = 0; i < num_hidden_layers; ++i) {
    types.emplace_back((i + 1) % 2 ? detail::kSlidingAttention : detail::kFullAttention);
  }
  return types;
}

void validate(const Gemma2Config& c, std::string_view origin) {
  validate(static_cast<const LlamaConfig&>(c), origin);
  if (c.sliding_window) detail::require_size(origin, "sliding_window", *c.sliding_window);
  detail::require_size(origin, "query_pre_attn_scalar", c.query_pre_attn_scalar);
  if (c.final_logit_softcapping && !(*c.final_logit_softcapping > 0.0)) {
    detail::config_fail(origin, "final_logit_softcapping must be > 0 or null");
  }
  if (c.attn_logit_softcapping && !(*c.attn_logit_softcapping > 0.0)) {
    detail::config_fail(origin, "attn_logit_softcapping must be > 0 or null");
  }
  detail::validate_layer_types(c.layer_types, c.num_hidden_layers, origin);
}

double parameter_count(const Gemma2Config& c) {
  // Llama's count plus the two norms after attention and the MLP.
  return parameter_count(static_cast<const LlamaConfig&>(c)) +
         static_cast<double>(c.num_hidden_layers) * 2.0 * static_cast<double>(c.hidden_size);
}

std::string describe_size(const Gemma2Config& c) { return detail::llama_size_text(c, true); }

void apply_overrides(Gemma2Config& config, std::string_view overrides) {
  detail::apply_checked_overrides<Gemma2Config>(config, kKeys, overrides);
}

namespace detail {

Gemma2Config gemma2_from_json(const json::Value& doc, std::string_view origin) {
  Gemma2Config config;
  read_keys<Gemma2Config>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  read_layer_types(config.layer_types, doc, origin);
  refuse_bidirectional_attention(doc, origin);
  return config;
}

void write_json(const Gemma2Config& config, json::Object& doc) {
  write_llama_keys<Gemma2Config>(config, kKeys, "Gemma2ForCausalLM", doc);
  doc.emplace_back("layer_types", layer_types_json(config.resolved_layer_types()));
}

// google/gemma-2-2b: Gemma2Config's defaults.
std::optional<Gemma2Config> gemma2_preset(std::string_view name) {
  if (name != "gemma-2-2b") return std::nullopt;
  return Gemma2Config();
}

DecoderRecipe decoder_recipe(const Gemma2Config& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const LlamaConfig&>(c));
  r.model_type = Gemma2Config::kModelType;
  r.norm = NormKind::rms_norm_one_plus;
  r.placement = NormPlacement::sandwich;
  r.scale_embeddings = true;
  r.attention_softcap = c.attn_logit_softcapping;
  r.final_softcap = c.final_logit_softcapping;
  const std::vector<std::string> types = c.resolved_layer_types();
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    r.layers[i].attention_scale = 1.0 / std::sqrt(static_cast<double>(c.query_pre_attn_scalar));
    r.layers[i].sliding_window = types[i] == kSlidingAttention ? c.sliding_window : std::nullopt;
  }
  DecoderNames& n = r.names;
  n.attention_out_norm = "post_attention_layernorm";
  n.mlp_norm = "pre_feedforward_layernorm";
  n.mlp_out_norm = "post_feedforward_layernorm";
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
