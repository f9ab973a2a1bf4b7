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
  const auto fail = [&](const std::string& key, const char* expected) {
    throw TokenizerError(path.string() + ": " + key + ": expected " + expected);
  };
  const auto flag_in = [&](const json::Value& object, const char* key, const std::string& where) {
    const json::Value* value = object.find(key);
    if (value && !value->is_null() && !value->is_bool()) fail(where.empty() ? key : where + "." + key, "true or false");
    return value && value->is_bool() && value->as_bool();
  };
  // A string, or an AddedToken as transformers writes one: {"content": "</s>", "lstrip": false, ...}.
  const auto token_of = [&](const json::Value& value, const std::string& where) {
    if (value.is_string()) return ConfigToken{value.as_string()};
    const json::Value* content = value.is_object() ? value.find("content") : nullptr;
    if (!content || !content->is_string()) fail(where, "a string or an object with a \"content\" string");
    return ConfigToken{content->as_string(), flag_in(value, "special", where),
                       flag_in(value, "lstrip", where) || flag_in(value, "rstrip", where) ||
                           flag_in(value, "single_word", where)};
  };
  const auto text_of = [&](const char* key) -> std::optional<std::string> {
    const json::Value* value = root.find(key);
    if (!value || value->is_null()) return std::nullopt;
    return token_of(*value, key).content;
  };
  const auto flag_of = [&](const char* key) -> std::optional<bool> {
    const json::Value* value = root.find(key);
    if (!value || value->is_null()) return std::nullopt;
    return flag_in(root, key, "");
  };
  config.tokenizer_class = text_of("tokenizer_class");
  config.bos_token = text_of("bos_token");
  config.eos_token = text_of("eos_token");
  config.add_bos_token = flag_of("add_bos_token");
  config.add_eos_token = flag_of("add_eos_token");
  config.legacy = flag_of("legacy");
  config.add_prefix_space = flag_of("add_prefix_space");
  config.split_special_tokens = flag_of("split_special_tokens");
  for (const auto& [key, value] : root.as_object()) {
    config.keys.push_back(key);
    if (key.ends_with("_token") && (value.is_null() || value.is_string() || value.is_object())) {
      config.tokens.emplace_back(key, value.is_null() ? std::nullopt : std::optional(token_of(value, key)));
    }
  }
  for (const char* key : {"extra_special_tokens", "additional_special_tokens"}) {
    const json::Value* list = root.find(key);
    if (!list || list->is_null() || !config.extra_special_tokens.empty()) continue;
    if (!list->is_array()) fail(key, "a list of tokens");
    for (const json::Value& token : list->as_array()) config.extra_special_tokens.push_back(token_of(token, key));
  }
  if (const json::Value* decoder = root.find("added_tokens_decoder"); decoder && !decoder->is_null()) {
    if (!decoder->is_object()) fail("added_tokens_decoder", "an object of id -> token");
    auto& entries = config.added_tokens_decoder.emplace();
    for (const auto& [id, token] : decoder->as_object()) {
      const std::string where = "added_tokens_decoder." + id;
      if (id.empty() || id.size() > 9 || id.find_first_not_of("0123456789") != std::string::npos) fail(where, "a whole-number id");
      entries.emplace_back(static_cast<std::uint32_t>(std::stoul(id)), token_of(token, where));
    }
  }
  return config;
}

std::string as_is_tokenizer_config(const TokenizerConfig& config) {
  json::Value root = json::parse(config.text);  // read_tokenizer_config has read it already
  bool set = false;
  for (auto& [key, value] : root.as_object()) {
    if (key == "tokenizer_class") {
      value = "PreTrainedTokenizerFast";
      set = true;
    }
  }
  if (!set) root.as_object().emplace_back("tokenizer_class", "PreTrainedTokenizerFast");
  return json::write(root, 2) + "\n";
}

std::string minimal_tokenizer_config(const std::string& eos, const std::optional<std::string>& bos) {
  json::Object config{{"tokenizer_class", "PreTrainedTokenizerFast"}, {"eos_token", eos}};
  if (bos) config.emplace_back("bos_token", *bos);
  return json::write(config) + "\n";
}

}  // namespace llmrdzv::tokenizer
