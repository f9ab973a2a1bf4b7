// Reading and writing HF's vocab.json + merges.txt, with every check a tokenizer needs before it
// can trust them: ids dense and unique, all 256 byte symbols present, merges well-formed, their
// parts and results in the vocabulary, no duplicates. Errors name the file and the line (JSON
// syntax, merges) or the token. tokenizer.json's vocabulary and merges go through the same checks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "special_tokens.hpp"

namespace llmrdzv::tokenizer {

// Tokens by id (byte-mapped spelling).
std::vector<std::string> read_vocab_json(const std::filesystem::path& path);

struct MergeRule {
  std::uint32_t left;
  std::uint32_t right;
  std::uint32_t merged;
};

// A whole file, and a JSON file parsed (syntax errors name file:line), and a file written. Throw TokenizerError.
std::string read_whole_file(const std::filesystem::path& path);
void write_text(const std::filesystem::path& path, const std::string& text);
json::Value parse_json_file(const std::filesystem::path& path, const std::string& text);

// Tokens by id from a JSON object of token -> id; `where` names it in errors ("vocab.json",
// "tokenizer.json: model.vocab").
std::vector<std::string> vocab_from_json(const json::Value& vocab, const std::string& where);

// One merge as written, with where it was written: `where` prefixes its errors ("merges.txt:3"),
// `short_where` names it in another merge's error ("line 3").
struct MergeSpelling {
  std::string_view left;
  std::string_view right;
  std::string where;
  std::string short_where;
};

// Merge rules in rank order, resolved against the vocabulary (parts and result in it, no pair twice).
std::vector<MergeRule> resolve_merges(const std::vector<MergeSpelling>& spellings, const std::vector<std::string>& tokens);

// Merge rules in rank order, resolved against the vocabulary.
std::vector<MergeRule> read_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens);

// The text of vocab.json and merges.txt in HF's format.
std::string vocab_json_text(const std::vector<std::string>& tokens);
std::string merges_txt_text(const std::vector<std::string>& tokens, const std::vector<MergeRule>& merges);

// tokenizer_config.json and special_tokens_map.json (name, text) as GPT-2's own: GPT2Tokenizer
// with specials[0] (GPT-2's "<|endoftext|>") as its bos, eos and unk special token, the others
// extra special tokens, no prefix space, so transformers' AutoTokenizer.from_pretrained(dir) loads
// the tokenizer and knows its EOS.
std::vector<std::pair<std::string, std::string>> tokenizer_config_files(const std::vector<SpecialToken>& specials);

}  // namespace llmrdzv::tokenizer
