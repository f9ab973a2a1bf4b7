// HF tokenizers' tokenizer.json (what transformers 5's save_pretrained writes, alone), read for
// the tokenizer this trainer implements: byte-level BPE with GPT-2's pre-tokenizer, as GPT-2 and
// its fine-tunes ship it. Every component is checked against that: a normalizer, another
// pre-tokenizer or split pattern, a post-processor that adds tokens, SentencePiece-style byte
// fallback, merges ignored for whole words, or added tokens other than "<|endoftext|>" would
// encode differently, so each is refused with an error naming the component (a JSON path).
// The writer produces the same form, for exported models.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

struct TokenizerJson {
  std::vector<std::string> tokens;  // by id, byte-mapped spelling (model.vocab)
  std::vector<MergeRule> merges;    // rank order (model.merges)
};

// Throws TokenizerError naming the file and the component.
TokenizerJson read_tokenizer_json(const std::filesystem::path& path);

// Writes the tokenizer as transformers 5 saves GPT-2's (the components read_tokenizer_json
// accepts, "<|endoftext|>" at id `eos` as the special added token), so AutoTokenizer loads it
// without vocab.json and merges.txt. Throws TokenizerError when it cannot write.
void write_tokenizer_json(const std::filesystem::path& path, const std::vector<std::string>& tokens,
                          const std::vector<MergeRule>& merges, std::uint32_t eos);

}  // namespace llmrdzv::tokenizer
