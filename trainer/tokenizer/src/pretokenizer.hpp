// The split patterns of byte-level BPE tokenizers as hand-written scanners instead of a regex
// engine: each cuts text into the pieces its pattern matches, leftmost alternative first, as HF's
// pre-tokenizers do.
//  - GPT-2 (ByteLevel with use_regex):
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//  - Llama 3 (Split with this regex, Isolated, then ByteLevel without its own regex):
//      (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//    ((?i) is Unicode case folding: besides the upper-case letters, U+017F (long s) matches 's').
//  - Qwen2 and Qwen3 (the same Split and ByteLevel): Llama 3's pattern with single digits, \p{N}
//    for \p{N}{1,3}.
// Bytes that are not part of well-formed UTF-8 come out as one-byte pieces and cut the text around
// them (see tokenizer.hpp for why).
#pragma once

#include <cstddef>
#include <string_view>

namespace llmrdzv::tokenizer {

enum class SplitPattern { gpt2, llama3, qwen2 };

// Llama 3's pattern as tokenizer.json spells it (the JSON string's value): the only Split regex read.
inline constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Qwen2's pattern as tokenizer.json spells it.
inline constexpr std::string_view kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

class PieceScanner {
 public:
  explicit PieceScanner(std::string_view text, SplitPattern pattern = SplitPattern::gpt2)
      : text_(text), pattern_(pattern) {}
  // The next piece, or false at the end of the text.
  bool next(std::string_view& piece);

 private:
  std::size_t scan_valid(std::size_t pos) const;
  std::size_t gpt2_piece_end(std::size_t start, std::size_t end) const;
  std::size_t llama3_piece_end(std::size_t start, std::size_t end) const;

  std::string_view text_;
  SplitPattern pattern_;
  std::size_t pos_ = 0;
  std::size_t valid_end_ = 0;  // end of the well-formed run pos_ is in
};

}  // namespace llmrdzv::tokenizer
