// SentencePiece-style BPE as HF's BPE model runs it for Llama 2 (no pre-tokenizer: the whole text
// is one word): ' ' becomes "▁", each character is its token, else its "<0xNN>" byte tokens (byte
// fallback), else the unknown token (consecutive ones fused into one with fuse_unk); then the
// merges by rank over the whole text (word by word where no merge can cross a word's start, each
// word's ids kept in the piece cache).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer_model.hpp"

namespace llmrdzv::tokenizer {

// Appends the ids of `text` (well-formed UTF-8 between special tokens and invalid bytes), with "▁"
// before it when `prefix`. `cache` holds words seen before and scratch space.
void encode_sentencepiece(const Tokenizer::Model& model, std::string_view text, bool prefix,
                          std::vector<TokenId>& out, Tokenizer::PieceCache& cache);

}  // namespace llmrdzv::tokenizer
