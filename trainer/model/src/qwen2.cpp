// Qwen2 and Qwen2.5 (HF's Qwen2ForCausalLM): Llama's maths and weight names with biases on q, k and
// v only, and a sliding window on the layers layer_types (or use_sliding_window with
// max_window_layers) names; its config.json keys, checks and presets.
#include "family_recipes.hpp"
#include "families.hpp"
#include "llama_keys.hpp"

namespace llmrdzv::model {
namespace {

const std::vector<detail::ConfigKey<Qwen2Config>> kKeys =
    detail::llama_keys<Qwen2Config>({{"max_window_layers", &Qwen2Config::max_window_layers},
                                     {"sliding_window", &Qwen2Config::sliding_window},
                                     {"use_sliding_window", &Qwen2Config::use_sliding_window}});

}  // namespace

std::vector<std::string> Qwen2Config::resolved_layer_types() const {
  if (!layer_types.empty()) return layer_types;
  std::vector<std::string> types;
  for (std::int64_t i = 0; i < num_hidden_layers; ++i) {
    const bool sliding = use_sliding_window && sliding_window && i >= max_window_layers;
    types.emplace_back(sliding ? detail::kSlidingAttention : detail::kFullAttention);
  }
  return types;
}

std::optional<std::int64_t> Qwen2Config::window_of(std::int64_t layer) const {
  const bool sliding = resolved_layer_types().at(static_cast<std::size_t>(layer)) == detail::kSlidingAttention;
  return use_sliding_window && sliding ? sliding_window : std::nullopt;
}

void validate(const Qwen2Config& c, std::string_view origin) {
  validate(static_cast<const LlamaConfig&>(c), origin);
  if (c.sliding_window) detail::require_size(origin, "sliding_window", *c.sliding_window);
  if (c.max_window_layers < 0) detail::config_fail(origin, "max_window_layers must be >= 0");
  detail::validate_layer_types(c.layer_types, c.num_hidden_layers, origin);
}

double parameter_count(const Qwen2Config& c) {
  const double biases = static_cast<double>((c.num_attention_heads + 2 * c.kv_heads()) * c.head_size());
  return parameter_count(static_cast<const LlamaConfig&>(c)) + static_cast<double>(c.num_hidden_layers) * biases;
}

std::string describe_size(const Qwen2Config& c) { return detail::llama_size_text(c, false); }

void apply_overrides(Qwen2Config& config, std::string_view overrides) {
  detail::apply_checked_overrides<Qwen2Config>(config, kKeys, overrides);
}

namespace detail {

Qwen2Config qwen2_from_json(const json::Value& doc, std::string_view origin) {
  Qwen2Config config;
  read_keys<Qwen2Config>(config, kKeys, doc, origin);
  read_llama_rope(config, doc, origin);
  read_layer_types(config.layer_types, doc, origin);
  return config;
}

void write_json(const Qwen2Config& config, json::Object& doc) {
  write_llama_keys<Qwen2Config>(config, kKeys, "Qwen2ForCausalLM", doc);
  doc.emplace_back("layer_types", layer_types_json(config.resolved_layer_types()));
}

// Qwen/Qwen2.5-0.5B and Qwen/Qwen2.5-7B.
std::optional<Qwen2Config> qwen2_preset(std::string_view name) {
  Qwen2Config c;
  c.rope_theta = 1000000.0;
  if (name == "qwen2.5-0.5b") {
    c.num_hidden_layers = 24, c.num_attention_heads = 14, c.num_key_value_heads = 2;
    c.hidden_size = 896, c.intermediate_size = 4864, c.tie_word_embeddings = true;
    c.max_window_layers = 24, c.sliding_window = 32768;
    return c;
  }
  if (name == "qwen2.5-7b") {
    c.num_hidden_layers = 28, c.num_attention_heads = 28, c.num_key_value_heads = 4;
    c.hidden_size = 3584, c.intermediate_size = 18944, c.vocab_size = 152064;
    c.max_position_embeddings = 131072, c.max_window_layers = 28, c.sliding_window = 131072;
    return c;
  }
  return std::nullopt;
}

DecoderRecipe decoder_recipe(const Qwen2Config& c) {
  DecoderRecipe r = decoder_recipe(static_cast<const LlamaConfig&>(c));
  r.model_type = Qwen2Config::kModelType;
  r.q_bias = r.k_bias = r.v_bias = true;
  r.o_bias = false;
  for (std::int64_t i = 0; i < c.num_hidden_layers; ++i) r.layers[static_cast<std::size_t>(i)].sliding_window = c.window_of(i);
  return r;
}

}  // namespace detail
}  // namespace llmrdzv::model
