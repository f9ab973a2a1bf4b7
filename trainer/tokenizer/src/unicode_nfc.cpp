// NFC by the algorithm of Unicode's UAX #15 on tables from gen_nfc_tables.py (see unicode_nfc.hpp).
#include "unicode_nfc.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

struct CombiningClassRange {
  char32_t first, last;
  std::uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  std::uint16_t offset;
  std::uint8_t length;
};
struct Composition {
  char32_t first, second, composite;
};
struct NfcRange {
  char32_t first, last;
};

#include "unicode_nfc_tables.inc"

// Hangul syllables: (L * 21 + V) * 28 + T from U+AC00 (Unicode's chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

const unsigned char* bytes_of(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

template <typename Range>
const Range* range_of(const Range* begin, const Range* end, char32_t cp) {
  const Range* it = std::upper_bound(begin, end, cp, [](char32_t c, const Range& r) { return c < r.first; });
  return it != begin && cp <= (it - 1)->last ? it - 1 : nullptr;
}

std::uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const CombiningClassRange* r = range_of(kCombiningClass, kCombiningClass + kCombiningClassCount, cp);
  return r ? r->ccc : 0;
}

bool maybe_changes(char32_t cp) { return cp >= 0x300 && range_of(kNfcMaybe, kNfcMaybe + kNfcMaybeCount, cp); }

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecomposition + kDecompositionCount;
  const Decomposition* it = std::lower_bound(kDecomposition, end, cp, [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecomposed + it->offset, kDecomposed + it->offset + it->length);
}

// The primary composite of (first, second), or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const Composition* end = kComposition + kCompositionCount;
  const Composition* it = std::lower_bound(kComposition, end, std::pair{first, second}, [](const Composition& c, const auto& key) {
    return std::pair{c.first, c.second} < key;
  });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

// NFC of well-formed UTF-8, appended to `out`.
void normalize_valid(std::string_view text, std::string& out) {
  std::vector<char32_t> chars;
  for (std::size_t pos = 0; pos < text.size();) {
    char32_t cp = 0;
    pos += utf8::decode(bytes_of(text) + pos, text.size() - pos, cp);
    decompose(cp, chars);
  }
  // Canonical ordering: each run of marks stably sorted by combining class.
  for (std::size_t i = 0; i < chars.size();) {
    if (combining_class(chars[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < chars.size() && combining_class(chars[j]) != 0) ++j;
    std::stable_sort(chars.begin() + static_cast<std::ptrdiff_t>(i), chars.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // Canonical composition: a mark joins the last starter unless a mark of the same or a higher
  // class stands between them (blocked); a starter joins only the starter right before it.
  if (chars.empty()) return;
  std::size_t starter = 0, kept = 1;
  int last_class = combining_class(chars[0]) == 0 ? 0 : 256;  // text opening with a mark: nothing joins it
  for (std::size_t i = 1; i < chars.size(); ++i) {
    const int cls = combining_class(chars[i]);
    const char32_t composite = compose(chars[starter], chars[i]);
    if (composite != 0 && (last_class < cls || last_class == 0)) {
      chars[starter] = composite;
      continue;
    }
    if (cls == 0) starter = kept;
    last_class = cls;
    chars[kept++] = chars[i];
  }
  for (std::size_t i = 0; i < kept; ++i) utf8::append(out, chars[i]);
}

}  // namespace

bool is_nfc_quick(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    const unsigned char b = bytes_of(text)[pos];
    if (b < 0xCC) {  // ASCII, or a sequence of a code point below U+0300, or not UTF-8
      ++pos;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = utf8::decode(bytes_of(text) + pos, text.size() - pos, cp);
    if (len == 0) {
      ++pos;
      continue;
    }
    if (maybe_changes(cp)) return false;
    pos += len;
  }
  return true;
}

std::string nfc(std::string_view text) {
  if (is_nfc_quick(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = pos;
    while (end < text.size()) {
      char32_t cp = 0;
      const std::size_t len = utf8::decode(bytes_of(text) + end, text.size() - end, cp);
      if (len == 0) break;
      end += len;
    }
    normalize_valid(text.substr(pos, end - pos), out);
    if (end < text.size()) out.push_back(text[end++]);  // an invalid byte, as it is
    pos = end;
  }
  return out;
}

}  // namespace llmrdzv::tokenizer
