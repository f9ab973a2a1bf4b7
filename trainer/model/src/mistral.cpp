// Mistral (HF's MistralForCausalLM): Llama's maths and weight names with sliding-window attention
// on every layer; its config.json keys, checks and presets.
#include "family_recipes.hpp"
#include "families.hpp"
#include "llama_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<MistralConfig>> kKeys =
    detail::llama_keys<MistralConfig>({{"sliding_window", &MistralConfig::sliding_window}});

}  // namespace

void validate(const MistralConfig& c, std::string_view origin) {
  validate(static_cast<const LlamaConfig&>(c), origin);
  if (c.sliding_window) detail::require_size(origin, "sliding_window", *c.sliding_window);
}

void apply_overrides(MistralConfig& config, std::string_view overrides) {
  detail::apply_checked_overrides<MistralConfig>(config, kKeys, overrides);
}

namespace detail {

MistralConfig mistral_from_json(const json::Value& doc, std::string_view origin) {
  MistralConfig config;
  read_keys<MistralConfig>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  return config;
}

void write_json(const MistralConfig& config, json::Object& doc) {
  write_llama_keys<MistralConfig>(config, kKeys, "MistralForCausalLM", doc);
}

// mistralai/Mistral-7B-v0.1: the release with a 4096-position window.
std::optional<MistralConfig> mistral_preset(std::string_view name) {
  if (name != "mistral-7b") return std::nullopt;
  MistralConfig c;
  c.max_position_embeddings = 32768;
  c.rms_norm_eps = 1e-5;
  return c;
}

DecoderRecipe decoder_recipe(const MistralConfig& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const LlamaConfig&>(c));
  r.model_type = MistralConfig::kModelType;
  for (LayerChoice& layer : r.layers) layer.sliding_window = c.sliding_window;
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
