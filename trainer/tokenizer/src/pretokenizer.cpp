// The piece scanners (see pretokenizer.hpp). Each branch of a *_piece_end function is one
// alternative of its pattern, tried in the pattern's order, on a run of well-formed UTF-8.
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

// The end of the run of characters of class `cls` starting at `from`.
inline std::size_t run_of(std::string_view text, std::size_t from, std::size_t end, CodePointClass cls) {
  while (from < end) {
    const Decoded d = decode_at(text, from, end);
    if (d.cls != cls) break;
    from += d.len;
  }
  return from;
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

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at pos (text[pos] is '\''): the letters in either case, and
// U+017F (long s), whose case folding is 's', for 's'.
inline std::size_t folded_contraction_length(std::string_view text, std::size_t pos, std::size_t end) {
  std::size_t p = pos + 1;
  const auto take = [&](char lower) {
    if (p < end && (text[p] | 0x20) == lower) {
      ++p;
      return true;
    }
    if (lower == 's' && p + 1 < end && text[p] == '\xC5' && text[p + 1] == '\xBF') {
      p += 2;
      return true;
    }
    return false;
  };
  for (const char c : {'s', 't', 'm', 'd'}) {
    p = pos + 1;
    if (take(c)) return p - pos;
  }
  for (const char* pair : {"re", "ve", "ll"}) {
    p = pos + 1;
    if (take(pair[0]) && take(pair[1])) return p - pos;
  }
  return 0;
}

inline bool is_line_break(char32_t cp) { return cp == U'\r' || cp == U'\n'; }

// The whitespace run starting at a whitespace character.
struct WhitespaceRun {
  std::size_t last_start;        // where its last character starts
  std::size_t end;               // where it ends
  std::size_t after_line_break;  // just after its last '\r' or '\n'; 0 when it has none
  // \s+(?!\S) | \s+ : the run, minus its last character when a non-space follows it (a run that
  // reaches the end of the valid text is whole).
  std::size_t piece_end(std::size_t start, std::size_t text_end) const {
    return end < text_end && last_start > start ? last_start : end;
  }
};

inline WhitespaceRun whitespace_run(std::string_view text, std::size_t start, std::size_t end) {
  WhitespaceRun run{start, start, 0};
  while (run.end < end) {
    const Decoded d = decode_at(text, run.end, end);
    if (d.cls != CodePointClass::kSpace) break;
    run.last_start = run.end;
    run.end += d.len;
    if (is_line_break(d.cp)) run.after_line_break = run.end;
  }
  return run;
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
  const std::size_t start = pos_;
  pos_ = pattern_ == SplitPattern::gpt2 ? gpt2_piece_end(start, valid_end_) : llama3_piece_end(start, valid_end_);
  piece = text_.substr(start, pos_ - start);
  return true;
}

std::size_t PieceScanner::gpt2_piece_end(std::size_t start, std::size_t end) const {
  const Decoded first = decode_at(text_, start, end);
  // 's|'t|'re|'ve|'m|'ll|'d
  if (first.cp == U'\'') {
    if (const std::size_t len = contraction_length(text_, start, end)) return start + len;
  }
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+  with the optional leading space
  if (first.cp == U' ' && start + 1 < end) {
    const Decoded second = decode_at(text_, start + 1, end);
    if (second.cls != CodePointClass::kSpace) return run_of(text_, start + 1, end, second.cls);
  }
  // \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+
  if (first.cls != CodePointClass::kSpace) return run_of(text_, start, end, first.cls);
  return whitespace_run(text_, start, end).piece_end(start, end);
}

std::size_t PieceScanner::llama3_piece_end(std::size_t start, std::size_t end) const {
  const Decoded first = decode_at(text_, start, end);
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (first.cp == U'\'') {
    if (const std::size_t len = folded_contraction_length(text_, start, end)) return start + len;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (first.cls == CodePointClass::kLetter) return run_of(text_, start, end, CodePointClass::kLetter);
  if (first.cls != CodePointClass::kNumber && !is_line_break(first.cp) && start + first.len < end &&
      decode_at(text_, start + first.len, end).cls == CodePointClass::kLetter) {
    return run_of(text_, start + first.len, end, CodePointClass::kLetter);
  }
  // \p{N}{1,3} (Qwen2: \p{N})
  if (first.cls == CodePointClass::kNumber) {
    const int digits = pattern_ == SplitPattern::qwen2 ? 1 : 3;
    std::size_t pos = start;
    for (int n = 0; n < digits && pos < end; ++n) {
      const Decoded d = decode_at(text_, pos, end);
      if (d.cls != CodePointClass::kNumber) break;
      pos += d.len;
    }
    return pos;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  std::size_t other = start;
  if (first.cp == U' ' && start + 1 < end && decode_at(text_, start + 1, end).cls == CodePointClass::kOther) other = start + 1;
  if (decode_at(text_, other, end).cls == CodePointClass::kOther) {
    std::size_t pos = run_of(text_, other, end, CodePointClass::kOther);
    while (pos < end && (text_[pos] == '\r' || text_[pos] == '\n')) ++pos;
    return pos;
  }
  // Whitespace from here on. \s*[\r\n]+ : the run up to and with its last line break.
  const WhitespaceRun run = whitespace_run(text_, start, end);
  return run.after_line_break != 0 ? run.after_line_break : run.piece_end(start, end);
}

}  // namespace llmrdzv::tokenizer
