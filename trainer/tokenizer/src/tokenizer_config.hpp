// tokenizer_config.json next to a tokenizer.json: the settings with which transformers 5 changes
// what tokenizer.json alone says (which token is the EOS, whether a BOS is added, and the class
// whose constructor rebuilds parts of the tokenizer), so that reading both encodes as
// AutoTokenizer does.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace llmrdzv::tokenizer {

struct TokenizerConfig {
  std::string text;  // the file as read
  std::optional<std::string> tokenizer_class;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<bool> legacy;
  std::optional<bool> add_prefix_space;
};

// nullopt when the file does not exist. Throws TokenizerError naming the file and key when it is
// not JSON or a key that matters has the wrong type.
std::optional<TokenizerConfig> read_tokenizer_config(const std::filesystem::path& path);

// A tokenizer_config.json with which AutoTokenizer loads a tokenizer.json as it is
// (PreTrainedTokenizerFast) and knows its EOS and BOS.
std::string minimal_tokenizer_config(const std::string& eos, const std::optional<std::string>& bos);

}  // namespace llmrdzv::tokenizer
