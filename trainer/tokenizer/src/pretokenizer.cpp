// The GPT-2 piece scanner (see pretokenizer.hpp). Each branch below is one alternative of the
// pattern, tried in the pattern's order.
#include "pretokenizer.hpp"

#include "unicode_class.hpp"
#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

struct Decoded {
  char32_t cp;
  std::size_t len;
  CodePointClass cls;
};

// Decodes at pos inside a run already known to be well-formed UTF-8 that ends at end.
inline Decoded decode_at(std::string_view text, std::size_t pos, std::size_t end) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  Decoded d{};
  if (*p < 0x80) {
    d.cp = *p;
    d.len = 1;
  } else {
    d.len = utf8::decode(p, end - pos, d.cp);
  }
  d.cls = classify(d.cp);
  return d;
}

inline std::size_t contraction_length(std::string_view text, std::size_t pos, std::size_t end) {
  // text[pos] is '\''.
  if (pos + 1 >= end) return 0;
  const char c1 = text[pos + 1];
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= end) return 0;
  const char c2 = text[pos + 2];
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

}  // namespace

std::size_t PieceScanner::scan_valid(std::size_t pos) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text_.data());
  while (pos < text_.size()) {
    if (p[pos] < 0x80) {
      ++pos;
      continue;
    }
    char32_t cp;
    const std::size_t len = utf8::decode(p + pos, text_.size() - pos, cp);
    if (len == 0) break;
    pos += len;
  }
  return pos;
}

bool PieceScanner::next(std::string_view& piece) {
  if (pos_ >= text_.size()) return false;
  if (pos_ >= valid_end_) {
    valid_end_ = scan_valid(pos_);
    if (valid_end_ == pos_) {  // an invalid byte: a piece of its own
      piece = text_.substr(pos_++, 1);
      return true;
    }
  }
  const std::size_t end = valid_end_;
  const std::size_t start = pos_;
  auto emit = [&](std::size_t piece_end) {
    piece = text_.substr(start, piece_end - start);
    pos_ = piece_end;
    return true;
  };
  auto run_of = [&](std::size_t from, CodePointClass cls) {
    while (from < end) {
      const Decoded d = decode_at(text_, from, end);
      if (d.cls != cls) break;
      from += d.len;
    }
    return from;
  };

  const Decoded first = decode_at(text_, start, end);
  // 's|'t|'re|'ve|'m|'ll|'d
  if (first.cp == U'\'') {
    if (const std::size_t len = contraction_length(text_, start, end)) return emit(start + len);
  }
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+  with the optional leading space
  if (first.cp == U' ' && start + 1 < end) {
    const Decoded second = decode_at(text_, start + 1, end);
    if (second.cls != CodePointClass::kSpace) return emit(run_of(start + 1, second.cls));
  }
  // \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+
  if (first.cls != CodePointClass::kSpace) return emit(run_of(start, first.cls));
  // \s+(?!\S) : the whitespace run, minus its last character when a non-space follows it
  std::size_t last_start = start;
  std::size_t run_end = start;
  while (run_end < end) {
    const Decoded d = decode_at(text_, run_end, end);
    if (d.cls != CodePointClass::kSpace) break;
    last_start = run_end;
    run_end += d.len;
  }
  if (run_end < end && last_start > start) return emit(last_start);
  // \s+ (also the whole run when it reaches the end of the valid text)
  return emit(run_end);
}

}  // namespace llmrdzv::tokenizer
