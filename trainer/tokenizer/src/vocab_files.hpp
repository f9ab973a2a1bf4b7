// Reading and writing HF's vocab.json + merges.txt, with every check a tokenizer needs before it
// can trust them: ids dense and unique, all 256 byte symbols present, merges well-formed, their
// parts and results in the vocabulary, no duplicates. Errors name file:line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace llmrdzv::tokenizer {

// Tokens by id (byte-mapped spelling).
std::vector<std::string> read_vocab_json(const std::filesystem::path& path);

struct MergeRule {
  std::uint32_t left;
  std::uint32_t right;
  std::uint32_t merged;
};

// Merge rules in rank order, resolved against the vocabulary.
std::vector<MergeRule> read_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens);

void write_vocab_json(const std::filesystem::path& path, const std::vector<std::string>& tokens);
void write_merges_txt(const std::filesystem::path& path, const std::vector<std::string>& tokens,
                      const std::vector<MergeRule>& merges);

// dir/tokenizer_config.json and dir/special_tokens_map.json as GPT-2's own: GPT2Tokenizer with
// "<|endoftext|>" (id `eos`) as its bos, eos and unk special token, no prefix space, so
// transformers' AutoTokenizer.from_pretrained(dir) loads the tokenizer and knows its EOS.
void write_tokenizer_config(const std::filesystem::path& dir, std::uint32_t eos);

}  // namespace llmrdzv::tokenizer
