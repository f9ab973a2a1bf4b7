// Runs hf_tokenizer_oracle.py (HF's GPT-2 tokenizer in the project venv) on byte strings and
// returns its ids, so tests can compare our tokenizer with HF's byte for byte.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace llmrdzv::test {

struct OracleTraining {
  std::filesystem::path corpus;
  int vocab_size = 1000;
  bool with_eos = true;
  bool keep_newlines = false;  // train on the corpus as one text: merges of line breaks too
};

struct OracleResult {
  std::vector<std::vector<std::uint32_t>> ids;  // one per case
  std::uint32_t eos = 0;
  std::size_t vocab_size = 0;
  std::string loader;  // the transformers class that loaded the directory
};

// Encodes every case with HF's tokenizer loaded from dir (training a vocabulary into dir first
// when training is given). Throws std::runtime_error when the script fails.
OracleResult hf_encode(const std::filesystem::path& dir, const std::vector<std::string>& cases,
                       const std::optional<OracleTraining>& training = std::nullopt);

// Saves the tokenizer in dir as transformers 5 does (save_pretrained: tokenizer.json and
// tokenizer_config.json, no vocab.json/merges.txt) into dest.
void hf_resave(const std::filesystem::path& dir, const std::filesystem::path& dest);

}  // namespace llmrdzv::test
