// OPTConfig's keys, checks, size and presets (facebook/opt-* shapes).
#include "llmrdzv/model/opt_config.hpp"

#include "config_fields.hpp"
#include "families.hpp"

namespace llmrdzv::model {
namespace {

using Key = detail::ConfigKey<OptConfig>;

// In config.json's (alphabetical) order.
const Key kKeys[] = {
    {"_remove_final_layer_norm", &OptConfig::remove_final_layer_norm},
    {"activation_function", &OptConfig::activation_function},
    {"attention_dropout", &OptConfig::attention_dropout},
    {"bos_token_id", &OptConfig::bos_token_id},
    {"do_layer_norm_before", &OptConfig::do_layer_norm_before},
    {"dropout", &OptConfig::dropout},
    {"enable_bias", &OptConfig::enable_bias},
    {"eos_token_id", &OptConfig::eos_token_id},
    {"ffn_dim", &OptConfig::ffn_dim},
    {"hidden_size", &OptConfig::hidden_size},
    {"init_std", &OptConfig::init_std},
    {"layer_norm_elementwise_affine", &OptConfig::layer_norm_elementwise_affine},
    {"layerdrop", &OptConfig::layerdrop},
    {"max_position_embeddings", &OptConfig::max_position_embeddings},
    {"num_attention_heads", &OptConfig::num_attention_heads},
    {"num_hidden_layers", &OptConfig::num_hidden_layers},
    {"pad_token_id", &OptConfig::pad_token_id},
    {"tie_word_embeddings", &OptConfig::tie_word_embeddings},
    {"vocab_size", &OptConfig::vocab_size},
    {"word_embed_proj_dim", &OptConfig::word_embed_proj_dim},
};

bool known_activation(std::string_view name) {
  return name == "relu" || name == "gelu" || name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "silu";
}

}  // namespace

void validate(const OptConfig& c, std::string_view origin) {
  using detail::config_fail;
  detail::require_size(origin, "vocab_size", c.vocab_size);
  detail::require_size(origin, "hidden_size", c.hidden_size);
  detail::require_size(origin, "num_hidden_layers", c.num_hidden_layers);
  detail::require_size(origin, "num_attention_heads", c.num_attention_heads);
  detail::require_size(origin, "ffn_dim", c.ffn_dim);
  detail::require_size(origin, "max_position_embeddings", c.max_position_embeddings);
  if (c.word_embed_proj_dim) detail::require_size(origin, "word_embed_proj_dim", *c.word_embed_proj_dim);
  if (c.hidden_size % c.num_attention_heads != 0) {
    config_fail(origin, "hidden_size (" + std::to_string(c.hidden_size) + ") must be divisible by num_attention_heads (" +
                            std::to_string(c.num_attention_heads) + ")");
  }
  detail::require_probability(origin, "dropout", c.dropout);
  detail::require_probability(origin, "attention_dropout", c.attention_dropout);
  if (c.layerdrop != 0.0) config_fail(origin, "layerdrop must be 0 (dropping whole layers in training is not supported)");
  if (!(c.init_std >= 0.0)) config_fail(origin, "init_std must be >= 0");
  if (!known_activation(c.activation_function)) {
    config_fail(origin, "activation_function \"" + c.activation_function +
                            "\" is not one of relu, gelu, gelu_new, gelu_pytorch_tanh, silu");
  }
  detail::require_token_id(origin, "bos_token_id", c.bos_token_id, c.vocab_size);
  detail::require_token_ids(origin, "eos_token_id", c.eos_token_id, c.vocab_size);
  detail::require_token_id(origin, "pad_token_id", c.pad_token_id, c.vocab_size);
  if (parameter_count(c) > kMaxParameters) config_fail(origin, describe_size(c) + ", more than any machine holds");
}

double parameter_count(const OptConfig& c) {
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.ffn_dim);
  const double e = static_cast<double>(c.embed_dim()), v = static_cast<double>(c.vocab_size);
  const double bias = c.enable_bias ? 1 : 0, norm = c.layer_norm_elementwise_affine ? 2 * h : 0;
  const double per_layer = 4 * (h * h + bias * h) + (h * f + bias * f) + (f * h + bias * h) + 2 * norm;
  const double projections = e != h ? 2 * e * h : 0;
  return v * e + static_cast<double>(c.max_position_embeddings + OptConfig::kPositionOffset) * h + projections +
         static_cast<double>(c.num_hidden_layers) * per_layer + (c.has_final_layer_norm() ? norm : 0) +
         (c.tie_word_embeddings ? 0 : v * e);
}

std::string describe_size(const OptConfig& c) {
  return "num_hidden_layers=" + std::to_string(c.num_hidden_layers) + ", hidden_size=" + std::to_string(c.hidden_size) +
         ", ffn_dim=" + std::to_string(c.ffn_dim) + ", vocab_size=" + std::to_string(c.vocab_size) +
         ", max_position_embeddings=" + std::to_string(c.max_position_embeddings) +
         detail::imply_parameters(parameter_count(c));
}

void apply_overrides(OptConfig& config, std::string_view overrides) {
  detail::apply_checked_overrides<OptConfig>(config, kKeys, overrides);
}

namespace detail {

OptConfig opt_from_json(const json::Value& doc, std::string_view origin) {
  OptConfig config;
  read_keys<OptConfig>(config, kKeys, doc, origin);
  return config;
}

void write_json(const OptConfig& config, json::Object& doc) {
  doc.emplace_back("architectures", json::Array{json::Value("OPTForCausalLM")});
  doc.emplace_back("model_type", json::Value("opt"));
  OptConfig written = config;
  written.word_embed_proj_dim = config.embed_dim();  // as transformers writes it
  write_keys<OptConfig>(written, kKeys, doc);
}

std::optional<OptConfig> opt_preset(std::string_view name) {
  struct Shape {
    std::string_view name;
    std::int64_t layers, heads, hidden, ffn, embed;
    bool pre_ln;
  };
  static constexpr Shape kShapes[] = {{"opt-125m", 12, 12, 768, 3072, 768, true},
                                      {"opt-350m", 24, 16, 1024, 4096, 512, false},
                                      {"opt-1.3b", 24, 32, 2048, 8192, 2048, true},
                                      {"opt-2.7b", 32, 32, 2560, 10240, 2560, true},
                                      {"opt-6.7b", 32, 32, 4096, 16384, 4096, true}};
  for (const Shape& s : kShapes) {
    if (s.name != name) continue;
    OptConfig c;
    c.num_hidden_layers = s.layers;
    c.num_attention_heads = s.heads;
    c.hidden_size = s.hidden;
    c.ffn_dim = s.ffn;
    c.word_embed_proj_dim = s.embed;
    c.do_layer_norm_before = s.pre_ln;
    return c;
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace llmrdzv::model
