// GPT-2's pre-tokenisation as a hand-written scanner instead of a regex engine: it cuts text into
// the pieces the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matches, leftmost alternative first, as HF's ByteLevel pre-tokenizer does. Bytes that are not
// part of well-formed UTF-8 come out as one-byte pieces and cut the text around them (see
// tokenizer.hpp for why).
#pragma once

#include <cstddef>
#include <string_view>

namespace llmrdzv::tokenizer {

class PieceScanner {
 public:
  explicit PieceScanner(std::string_view text) : text_(text) {}
  // The next piece, or false at the end of the text.
  bool next(std::string_view& piece);

 private:
  std::size_t scan_valid(std::size_t pos) const;

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t valid_end_ = 0;  // end of the well-formed run pos_ is in
};

}  // namespace llmrdzv::tokenizer
