// Phi-3 (HF's Phi3ForCausalLM): Llama's maths with q, k and v in one qkv_proj and gate and up in one
// gate_up_proj (as stored), dropout on the residual branches and a sliding window on every layer;
// its config.json keys, checks and presets. Rotation of part of each head (partial_rotary_factor)
// and the longrope scaling of the 128k models are refused by name.
#include "family_recipes.hpp"
#include "families.hpp"
#include "llama_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<Phi3Config>> kKeys =
    detail::llama_keys<Phi3Config>({{"embd_pdrop", &Phi3Config::embd_pdrop},
                                    {"original_max_position_embeddings", &Phi3Config::original_max_position_embeddings},
                                    {"resid_pdrop", &Phi3Config::resid_pdrop},
                                    {"sliding_window", &Phi3Config::sliding_window}});

// partial_rotary_factor at the top level or in rope_parameters / rope_scaling: only 1 (every
// dimension of a head rotated) is computed.
void require_full_rotation(const json::Value& doc, std::string_view origin) {
  for (const json::Value* holder : {&doc, doc.find("rope_parameters"), doc.find("rope_scaling")}) {
    if (!holder || !holder->is_object()) continue;
    const json::Value* factor = holder->find("partial_rotary_factor");
    if (factor && !(factor->is_number() && factor->as_double() == 1.0)) {
      detail::config_fail(origin, "partial_rotary_factor must be 1 (rotating part of each head is not supported)");
    }
  }
}

}  // namespace

void validate(const Phi3Config& c, std::string_view origin) {
  validate(static_cast<const LlamaConfig&>(c), origin);
  if (c.sliding_window) detail::require_size(origin, "sliding_window", *c.sliding_window);
  detail::require_probability(origin, "resid_pdrop", c.resid_pdrop);
  detail::require_probability(origin, "embd_pdrop", c.embd_pdrop);
}

void apply_overrides(Phi3Config& config, std::string_view overrides) {
  detail::apply_checked_overrides<Phi3Config>(config, kKeys, overrides);
}

namespace detail {

Phi3Config phi3_from_json(const json::Value& doc, std::string_view origin) {
  Phi3Config config;
  read_keys<Phi3Config>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  require_full_rotation(doc, origin);
  return config;
}

void write_json(const Phi3Config& config, json::Object& doc) {
  write_llama_keys<Phi3Config>(config, kKeys, "Phi3ForCausalLM", doc);
}

// microsoft/Phi-3-mini-4k-instruct.
std::optional<Phi3Config> phi3_preset(std::string_view name) {
  if (name != "phi-3-mini") return std::nullopt;
  Phi3Config c;
  c.sliding_window = 2047;
  return c;
}

DecoderRecipe decoder_recipe(const Phi3Config& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const LlamaConfig&>(c));
  r.model_type = Phi3Config::kModelType;
  r.residual_dropout = c.resid_pdrop;
  for (LayerChoice& layer : r.layers) layer.sliding_window = c.sliding_window;
  r.mlp = MlpKind::fused_gated;
  DecoderNames& n = r.names;
  n.q = n.k = n.v = "";
  n.qkv = "self_attn.qkv_proj";
  n.gate = n.up = "";
  n.gate_up = "mlp.gate_up_proj";
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
