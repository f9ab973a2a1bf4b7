// tokenizer_config.json next to a tokenizer.json or a vocab.json + merges.txt pair: the settings
// with which transformers 5 changes what the vocabulary files alone say (which token is the EOS,
// whether a BOS is added, which tokens are special, and the class whose constructor rebuilds parts
// of the tokenizer), so that reading both encodes as AutoTokenizer does. special_tokens_map.json
// has the same form for its tokens and is read with the same reader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmrdzv::tokenizer {

// A token as a config names it: a string, or an AddedToken object ({"content": "</s>", ...}).
struct ConfigToken {
  std::string content;
  bool special = true;  // a string is special; an AddedToken only with "special": true
  bool strips = false;  // lstrip, rstrip or single_word: HF matches it with whitespace around it
};

struct TokenizerConfig {
  std::string text;  // the file as read
  std::optional<std::string> tokenizer_class;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<bool> legacy;
  std::optional<bool> add_prefix_space;
  std::optional<bool> split_special_tokens;
  // Every "<name>_token" key that is a string, an AddedToken object or null (nullopt), file order.
  std::vector<std::pair<std::string, std::optional<ConfigToken>>> tokens;
  // The "extra_special_tokens" (or older "additional_special_tokens") list.
  std::vector<ConfigToken> extra_special_tokens;
  // "added_tokens_decoder": id -> token, when the file has one.
  std::optional<std::vector<std::pair<std::uint32_t, ConfigToken>>> added_tokens_decoder;
  std::vector<std::string> keys;  // every top-level key, file order
};

// nullopt when the file does not exist. Throws TokenizerError naming the file and key when it is
// not JSON or a key that matters has the wrong type.
std::optional<TokenizerConfig> read_tokenizer_config(const std::filesystem::path& path);

// A tokenizer_config.json with which AutoTokenizer loads a tokenizer.json as it is
// (PreTrainedTokenizerFast) and knows its EOS and BOS.
std::string minimal_tokenizer_config(const std::string& eos, const std::optional<std::string>& bos);

// `config` (a tokenizer_config.json's text) with tokenizer_class PreTrainedTokenizerFast: what a
// tokenizer read as its tokenizer.json is, whatever class its directory named, keeps being read
// so in a directory whose config.json names another model type.
std::string as_is_tokenizer_config(const TokenizerConfig& config);

}  // namespace llmrdzv::tokenizer
