// The encoder's memo of pieces it has already turned into ids: GPT-2 / Llama 3 pre-tokenizer pieces,
// and Llama 2's SentencePiece words. Text repeats its words, so most pieces are found here instead of
// being merged again. Bounded: it is emptied when full, and long pieces are not kept.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::tokenizer {

struct Tokenizer::PieceCache {
  // Pieces longer than this are not kept (long runs are rare and would crowd the cache out).
  static constexpr std::size_t kMaxPiece = 64;
  static constexpr std::size_t kMaxEntries = 1 << 18;

  const std::vector<TokenId>* find(std::string_view piece) const {
    const auto it = pieces.find(piece);
    return it == pieces.end() ? nullptr : &it->second;
  }
  void remember(std::string_view piece, const std::vector<TokenId>& ids) {
    if (piece.size() > kMaxPiece) return;
    if (pieces.size() >= kMaxEntries) pieces.clear();
    pieces.emplace(std::string(piece), ids);
  }

  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> pieces;
  std::vector<TokenId> scratch;  // reused between pieces
  std::string mapped;            // likewise
};

}  // namespace llmrdzv::tokenizer
