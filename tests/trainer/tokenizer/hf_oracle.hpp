// Runs hf_tokenizer_oracle.py (HF's tokenizers through transformers, in the project venv) on byte
// strings and returns its ids, so tests can compare our tokenizer with HF's byte for byte.
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
  // Empty: GPT-2's vocab.json + merges.txt. Else a tokenizer.json + tokenizer_config.json of this
  // kind (hf_tokenizer_oracle.py's make_*): "opt", "llama3", "qwen2", "gemma", "phi3", "llama2" (transformers 5's Metaspace
  // form), "llama2-always" (the same with legacy), "llama2-legacy" (the normalizer form, read as it
  // is) and "llama2-hub" (the normalizer form with LlamaTokenizer's config, as Meta ships it); or
  // vocab.json + merges.txt + tokenizer_config.json: "opt-raw" (make_opt's files before transformers
  // re-saves them) and "opt-hub-raw" (as facebook/opt-125m has them, with special_tokens_map.json
  // and a config.json instead of a tokenizer_class).
  std::string make{};
};

struct OracleResult {
  std::vector<std::vector<std::uint32_t>> ids;  // one per case
  std::uint32_t eos = 0;
  std::optional<std::uint32_t> bos;  // with with_bos, when HF's encoding adds one
  std::size_t vocab_size = 0;
  std::string loader;  // the transformers class that loaded the directory
};

// Encodes every case with HF's tokenizer loaded from dir (training a vocabulary into dir first
// when training is given), with the BOS HF's tokenizer(text) adds when with_bos (else
// add_special_tokens=False). Throws std::runtime_error when the script fails.
OracleResult hf_encode(const std::filesystem::path& dir, const std::vector<std::string>& cases,
                       const std::optional<OracleTraining>& training = std::nullopt, bool with_bos = false);

// Saves the tokenizer in dir as transformers 5 does (save_pretrained: tokenizer.json and
// tokenizer_config.json, no vocab.json/merges.txt) into dest.
void hf_resave(const std::filesystem::path& dir, const std::filesystem::path& dest);

}  // namespace llmrdzv::test
