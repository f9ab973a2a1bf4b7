// GPT2Config's keys, checks, size and presets.
#include "llmrdzv/model/gpt2_config.hpp"

#include "config_fields.hpp"
#include "families.hpp"

namespace llmrdzv::model {
namespace {

using Key = detail::ConfigKey<Gpt2Config>;

// In config.json's (alphabetical) order.
const Key kKeys[] = {
    {"activation_function", &Gpt2Config::activation_function},
    {"attn_pdrop", &Gpt2Config::attn_pdrop},
    {"bos_token_id", &Gpt2Config::bos_token_id},
    {"embd_pdrop", &Gpt2Config::embd_pdrop},
    {"eos_token_id", &Gpt2Config::eos_token_id},
    {"initializer_range", &Gpt2Config::initializer_range},
    {"layer_norm_epsilon", &Gpt2Config::layer_norm_epsilon},
    {"n_embd", &Gpt2Config::n_embd},
    {"n_head", &Gpt2Config::n_head},
    {"n_inner", &Gpt2Config::n_inner},
    {"n_layer", &Gpt2Config::n_layer},
    {"n_positions", &Gpt2Config::n_positions},
    {"resid_pdrop", &Gpt2Config::resid_pdrop},
    {"scale_attn_by_inverse_layer_idx", &Gpt2Config::scale_attn_by_inverse_layer_idx},
    {"scale_attn_weights", &Gpt2Config::scale_attn_weights},
    {"tie_word_embeddings", &Gpt2Config::tie_word_embeddings},
    {"vocab_size", &Gpt2Config::vocab_size},
};

bool known_activation(std::string_view name) {
  return name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu" || name == "relu" || name == "silu";
}

}  // namespace

void validate(const Gpt2Config& c, std::string_view origin) {
  using detail::config_fail;
  detail::require_size(origin, "vocab_size", c.vocab_size);
  detail::require_size(origin, "n_positions", c.n_positions);
  detail::require_size(origin, "n_embd", c.n_embd);
  detail::require_size(origin, "n_layer", c.n_layer);
  detail::require_size(origin, "n_head", c.n_head);
  if (c.n_inner) detail::require_size(origin, "n_inner", *c.n_inner);
  if (c.n_embd % c.n_head != 0) {
    config_fail(origin, "n_embd (" + std::to_string(c.n_embd) + ") must be divisible by n_head (" + std::to_string(c.n_head) + ")");
  }
  detail::require_probability(origin, "resid_pdrop", c.resid_pdrop);
  detail::require_probability(origin, "embd_pdrop", c.embd_pdrop);
  detail::require_probability(origin, "attn_pdrop", c.attn_pdrop);
  if (!(c.layer_norm_epsilon > 0.0)) config_fail(origin, "layer_norm_epsilon must be > 0");
  if (!(c.initializer_range >= 0.0)) config_fail(origin, "initializer_range must be >= 0");
  if (!known_activation(c.activation_function)) {
    config_fail(origin, "activation_function \"" + c.activation_function +
                            "\" is not one of gelu_new, gelu_pytorch_tanh, gelu, relu, silu");
  }
  detail::require_token_id(origin, "bos_token_id", c.bos_token_id, c.vocab_size);
  detail::require_token_ids(origin, "eos_token_id", c.eos_token_id, c.vocab_size);
  if (parameter_count(c) > kMaxParameters) config_fail(origin, describe_size(c) + ", more than any machine holds");
}

double parameter_count(const Gpt2Config& c) {
  const double e = static_cast<double>(c.n_embd), inner = static_cast<double>(c.inner_dim());
  const double per_layer = 2 * e + (e * 3 * e + 3 * e) + (e * e + e) + 2 * e + (e * inner + inner) + (inner * e + e);
  const double head = c.tie_word_embeddings ? 0 : static_cast<double>(c.vocab_size) * e;
  return static_cast<double>(c.vocab_size) * e + static_cast<double>(c.n_positions) * e +
         static_cast<double>(c.n_layer) * per_layer + 2 * e + head;
}

std::string describe_size(const Gpt2Config& c) {
  return "n_layer=" + std::to_string(c.n_layer) + ", n_embd=" + std::to_string(c.n_embd) +
         ", n_inner=" + std::to_string(c.inner_dim()) + ", vocab_size=" + std::to_string(c.vocab_size) +
         ", n_positions=" + std::to_string(c.n_positions) + detail::imply_parameters(parameter_count(c));
}

void apply_overrides(Gpt2Config& config, std::string_view overrides) {
  detail::apply_checked_overrides<Gpt2Config>(config, kKeys, overrides);
}

namespace detail {

Gpt2Config gpt2_from_json(const json::Value& doc, std::string_view origin) {
  if (const json::Value* cross = doc.find("add_cross_attention"); cross && cross->is_bool() && cross->as_bool()) {
    config_fail(origin, "add_cross_attention=true is not supported");
  }
  Gpt2Config config;
  read_keys<Gpt2Config>(config, kKeys, doc, origin);
  return config;
}

void write_json(const Gpt2Config& config, json::Object& doc) {
  doc.emplace_back("architectures", json::Array{json::Value("GPT2LMHeadModel")});
  doc.emplace_back("model_type", json::Value("gpt2"));
  write_keys<Gpt2Config>(config, kKeys, doc);
}

std::optional<Gpt2Config> gpt2_preset(std::string_view name) {
  struct Shape {
    std::string_view name;
    std::int64_t n_layer, n_head, n_embd;
  };
  static constexpr Shape kShapes[] = {
      {"gpt2", 12, 12, 768}, {"gpt2-medium", 24, 16, 1024}, {"gpt2-large", 36, 20, 1280}, {"gpt2-xl", 48, 25, 1600}};
  for (const Shape& s : kShapes) {
    if (s.name == name) {
      Gpt2Config c;
      c.n_layer = s.n_layer;
      c.n_head = s.n_head;
      c.n_embd = s.n_embd;
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace llmrdzv::model
