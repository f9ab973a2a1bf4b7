// ModelConfig: the family from config.json's model_type, and each operation handed to the
// family's own config.
#include "llmrdzv/model/model_config.hpp"

#include <cstdio>

#include "config_fields.hpp"
#include "families.hpp"
#include "llmrdzv/io/atomic_file.hpp"

namespace llmrdzv::model {

namespace detail {

std::string imply_parameters(double parameters) {
  char size[96];
  std::snprintf(size, sizeof size, " imply %.3g parameters (%.3g GiB in fp32)", parameters,
                parameters * 4 / (1024.0 * 1024.0 * 1024.0));
  return size;
}

}  // namespace detail

namespace {

template <typename... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

constexpr std::string_view kFamilies = "gpt2, opt, llama, mistral, qwen2, qwen3, phi3, gemma2 and gemma3_text";

}  // namespace

std::string_view ModelConfig::model_type() const {
  return visit([](const auto& c) { return std::decay_t<decltype(c)>::kModelType; });
}

std::int64_t ModelConfig::vocab_size() const {
  return visit([](const auto& c) { return c.vocab_size; });
}

std::int64_t ModelConfig::max_positions() const {
  return visit(Overloaded{[](const Gpt2Config& c) { return c.n_positions; },
                          [](const auto& c) { return c.max_position_embeddings; }});
}

std::int64_t ModelConfig::num_layers() const {
  return visit(Overloaded{[](const Gpt2Config& c) { return c.n_layer; }, [](const auto& c) { return c.num_hidden_layers; }});
}

const TokenIds& ModelConfig::eos_token_ids() const {
  return visit([](const auto& c) -> const TokenIds& { return c.eos_token_id; });
}

bool ModelConfig::tie_word_embeddings() const {
  return visit([](const auto& c) { return c.tie_word_embeddings; });
}

void ModelConfig::fit_to_tokenizer(std::int64_t vocab_size, std::int64_t eos_id, std::optional<std::int64_t> bos_id) {
  visit([&](auto& c) {
    c.vocab_size = vocab_size;
    c.eos_token_id = {eos_id};
    c.bos_token_id = bos_id.value_or(eos_id);
    if constexpr (!std::is_same_v<std::decay_t<decltype(c)>, Gpt2Config>) {
      if (c.pad_token_id && *c.pad_token_id >= vocab_size) c.pad_token_id.reset();
    }
  });
}

void validate(const ModelConfig& config, std::string_view origin) {
  config.visit([&](const auto& c) { validate(c, origin); });
}

double parameter_count(const ModelConfig& config) {
  return config.visit([](const auto& c) { return parameter_count(c); });
}

std::string describe_size(const ModelConfig& config) {
  return config.visit([](const auto& c) { return describe_size(c); });
}

void apply_overrides(ModelConfig& config, std::string_view overrides) {
  config.visit([&](auto& c) { apply_overrides(c, overrides); });
}

ModelConfig config_from_json(std::string_view text, std::string_view origin) {
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const json::ParseError& e) {
    detail::config_fail(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) detail::config_fail(origin, "expected a JSON object, got " + std::string(doc.kind_name()));
  // As transformers' AutoConfig: the family is named, never guessed (an OPT or Llama config
  // without it would otherwise be read as GPT-2 with every key ignored).
  const json::Value* given = doc.find("model_type");
  if (!given) detail::config_fail(origin, "no model_type (" + std::string(kFamilies) + "): transformers' AutoConfig needs it too");
  if (!given->is_string()) detail::config_fail(origin, "model_type must be a string");
  const std::string type = given->as_string();
  ModelConfig config;
  if (type == "gpt2") config = detail::gpt2_from_json(doc, origin);
  else if (type == "opt") config = detail::opt_from_json(doc, origin);
  else if (type == "llama") config = detail::llama_from_json(doc, origin);
  else if (type == "mistral") config = detail::mistral_from_json(doc, origin);
  else if (type == "qwen2") config = detail::qwen2_from_json(doc, origin);
  else if (type == "qwen3") config = detail::qwen3_from_json(doc, origin);
  else if (type == "phi3") config = detail::phi3_from_json(doc, origin);
  else if (type == "gemma2") config = detail::gemma2_from_json(doc, origin);
  else if (type == "gemma3_text") config = detail::gemma3_text_from_json(doc, origin);
  else detail::config_fail(origin, "model_type \"" + type + "\" is not supported (" + std::string(kFamilies) + " are)");
  validate(config, origin);
  return config;
}

ModelConfig load_config(const std::filesystem::path& path) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::string text;
  try {
    text = io::read_file(file);
  } catch (const io::IoError& e) {
    throw ConfigError(e.what());
  }
  return config_from_json(text, file.string());
}

std::string config_to_json(const ModelConfig& config) {
  json::Object doc;
  config.visit([&](const auto& c) { detail::write_json(c, doc); });
  return json::write(json::Value(std::move(doc)), 2) + "\n";
}

void save_config(const ModelConfig& config, const std::filesystem::path& dir) {
  io::atomic_write(dir / "config.json", config_to_json(config));
}

ModelConfig preset(std::string_view name) {
  if (auto c = detail::gpt2_preset(name)) return *c;
  if (auto c = detail::opt_preset(name)) return *c;
  if (auto c = detail::llama_preset(name)) return *c;
  if (auto c = detail::mistral_preset(name)) return *c;
  if (auto c = detail::qwen2_preset(name)) return *c;
  if (auto c = detail::qwen3_preset(name)) return *c;
  if (auto c = detail::phi3_preset(name)) return *c;
  if (auto c = detail::gemma2_preset(name)) return *c;
  if (auto c = detail::gemma3_text_preset(name)) return *c;
  throw ConfigError("unknown model preset \"" + std::string(name) +
                    "\" (gpt2, gpt2-medium, gpt2-large, gpt2-xl, opt-125m, opt-350m, opt-1.3b, opt-2.7b, opt-6.7b, "
                    "smollm-135m, tinyllama-1.1b, llama-2-7b, llama-2-13b, mistral-7b, qwen2.5-0.5b, qwen2.5-7b, qwen3-0.6b, "
                    "qwen3-8b, phi-3-mini, gemma-2-2b, gemma-3-1b)");
}

}  // namespace llmrdzv::model
