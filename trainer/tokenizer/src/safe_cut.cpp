// Chunk boundaries that keep each kind of tokenizer's pieces unchanged (see safe_cut.hpp).
#include "llmrdzv/tokenizer/safe_cut.hpp"

#include "unicode_class.hpp"
#include "whitespace_run.hpp"
#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

enum class Side { space, other, unknown };

const unsigned char* bytes_of(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

// How long a well-formed sequence starting with `lead` is; 1 for a byte that starts none.
std::size_t sequence_length(unsigned lead) {
  return lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 1;
}

// The character starting at `at`.
Side starting_at(std::string_view text, std::size_t at) {
  if (at >= text.size()) return Side::unknown;
  char32_t cp = 0;
  const std::size_t avail = text.size() - at;
  if (utf8::decode(bytes_of(text) + at, avail, cp) == 0) {
    // Invalid, or a sequence the end of the text cut off (its lead byte says how long it is).
    return avail < sequence_length(bytes_of(text)[at]) ? Side::unknown : Side::other;
  }
  return classify(cp) == CodePointClass::kSpace ? Side::space : Side::other;
}

// The character ending just before `end` (end > 0).
Side ending_before(std::string_view text, std::size_t end) {
  for (std::size_t length = 1; length <= 4 && length <= end; ++length) {
    const std::size_t start = end - length;
    char32_t cp = 0;
    if (utf8::decode(bytes_of(text) + start, text.size() - start, cp) == length) {
      return classify(cp) == CodePointClass::kSpace ? Side::space : Side::other;
    }
    if ((bytes_of(text)[start] & 0xC0) != 0x80) break;  // a lead byte that starts no sequence here
  }
  return Side::other;  // an invalid byte: a piece of its own
}

// Whitespace that, alone between non-whitespace, is a piece of its own under `rule`.
bool cut_after(char c, CutRule rule) {
  return c == '\n' || c == '\r' || (rule == CutRule::gpt2 && (c == '\t' || c == '\v' || c == '\f'));
}

bool ends_with_space_piece(std::string_view text) { return text.ends_with(' ') || text.ends_with("\xE2\x96\x81"); }

}  // namespace

std::size_t last_safe_cut(std::string_view text, CutRule rule) {
  if (rule == CutRule::none) return 0;
  for (std::size_t p = text.size(); p-- > 1;) {
    if (rule == CutRule::before_spaces) {
      if (text[p] == ' ' && !ends_with_space_piece(text.substr(0, p))) return p;
    } else if (cut_after(text[p - 1], rule)) {  // cut after it
      if (starting_at(text, p) == Side::other && (p == 1 || ending_before(text, p - 1) == Side::other)) return p;
    } else if (text[p] == ' ') {  // cut before it
      if (starting_at(text, p + 1) == Side::other && ending_before(text, p) == Side::other) return p;
    }
  }
  return 0;
}

std::size_t last_safe_cut(std::string_view text, const CutPlaces& places) {
  std::size_t p = last_safe_cut(text, places.rule);
  if (places.lstrip.empty() && places.rstrip.empty()) return p;
  const auto absorbed = [&](std::size_t at) {
    const std::string_view before = text.substr(0, whitespace_run_start(text, at));
    const std::string_view after = text.substr(whitespace_run_end(text, at));
    for (const std::string& token : places.rstrip) {
      if (before.ends_with(token)) return true;
    }
    for (const std::string& token : places.lstrip) {
      if (after.starts_with(token)) return true;
    }
    return false;
  };
  // An earlier place: the rule's last one in the text before this one.
  while (p > 0 && absorbed(p)) p = last_safe_cut(text.substr(0, p), places.rule);
  return p;
}

std::size_t last_character_boundary(std::string_view text) {
  // The last byte that is not a continuation byte starts the last character; it is complete when
  // its sequence fits in what follows (an invalid one is a character of one byte).
  for (std::size_t back = 1; back <= 4 && back <= text.size(); ++back) {
    const unsigned byte = bytes_of(text)[text.size() - back];
    if ((byte & 0xC0) != 0x80) return sequence_length(byte) > back ? text.size() - back : text.size();
  }
  return text.size();  // continuation bytes only: invalid bytes, each its own
}

}  // namespace llmrdzv::tokenizer
