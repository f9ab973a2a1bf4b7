// tokenizer_config.json reading, and the minimal one save() writes (see tokenizer_config.hpp).
#include "tokenizer_config.hpp"

#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

std::optional<TokenizerConfig> read_tokenizer_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  TokenizerConfig config;
  config.text = read_whole_file(path);
  const json::Value root = parse_json_file(path, config.text);
  if (!root.is_object()) throw TokenizerError(path.string() + ": expected a JSON object");
  const auto fail = [&](const char* key, const char* expected) {
    throw TokenizerError(path.string() + ": " + key + ": expected " + expected);
  };
  const auto text_of = [&](const char* key) -> std::optional<std::string> {
    const json::Value* value = root.find(key);
    if (!value || value->is_null()) return std::nullopt;
    if (value->is_string()) return value->as_string();
    // An AddedToken as transformers writes one: {"content": "</s>", "lstrip": false, ...}.
    const json::Value* content = value->is_object() ? value->find("content") : nullptr;
    if (!content || !content->is_string()) fail(key, "a string or an object with a \"content\" string");
    return content->as_string();
  };
  const auto flag_of = [&](const char* key) -> std::optional<bool> {
    const json::Value* value = root.find(key);
    if (!value || value->is_null()) return std::nullopt;
    if (!value->is_bool()) fail(key, "true or false");
    return value->as_bool();
  };
  config.tokenizer_class = text_of("tokenizer_class");
  config.bos_token = text_of("bos_token");
  config.eos_token = text_of("eos_token");
  config.add_bos_token = flag_of("add_bos_token");
  config.add_eos_token = flag_of("add_eos_token");
  config.legacy = flag_of("legacy");
  config.add_prefix_space = flag_of("add_prefix_space");
  return config;
}

std::string minimal_tokenizer_config(const std::string& eos, const std::optional<std::string>& bos) {
  json::Object config{{"tokenizer_class", "PreTrainedTokenizerFast"}, {"eos_token", eos}};
  if (bos) config.emplace_back("bos_token", *bos);
  return json::write(config) + "\n";
}

}  // namespace llmrdzv::tokenizer
