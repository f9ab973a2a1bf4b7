// Damaged copies of a valid input, for tests that hold a parser to "bad input of any kind gets a
// clear error": what a torn write, a hand edit, a wrong file or a hostile peer could hand it.
// Deterministic: a mutator seeded with N gives the same inputs on every machine, so a failure
// names its seed and case and reproduces. Header-only so that every test binary, torch-linked or
// not, ASan-built or not, can use it (tests/support is on every test's include path).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace llmrdzv::testing {

class InputMutator {
 public:
  explicit InputMutator(std::uint64_t seed) : rng_(seed) {}

  // One to four stacked edits of `valid`: flipped bits, structural bytes, numbers at the edges
  // of every integer type, broken UTF-8 and escapes, deep nesting, cut, dropped or repeated
  // ranges, and 8-byte little-endian values (binary headers' lengths and offsets).
  std::string mutate(std::string_view valid) {
    std::string text(valid);
    const int edits = 1 + static_cast<int>(below(4));
    for (int i = 0; i < edits; ++i) edit(text);
    return text;
  }

 private:
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }
  std::size_t position(const std::string& text) { return static_cast<std::size_t>(below(text.size() + 1)); }

  void edit(std::string& text) {
    static constexpr std::array<char, 22> kBytes = {'\0', '\xff', '\x80', '\xc3', '"', '\\', '{', '}', '[', ']', ',',
                                                    ':', '\n', ' ', '-', '0', '9', 'e', '.', '#', '=', '\t'};
    static constexpr std::array<std::string_view, 36> kTokens = {
        "0", "-1", "-0", "1e400", "-1e400", "1e-400", "0.5", "4294967296", "4294967295", "2147483648",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "99999999999999999999999999", "NaN", "null", "true", "\"\"", "[]", "{}", "\\u0000", "\\ud800",
        "\\uDFFF", "\xf0\x9f", "\xed\xa0\x80", "\xc0\xaf", "~", "&a", "*a", "!!binary", "---", ": [",
        "{\"a\": 1, \"a\": 2}", "\"\\", "\r\n"};
    if (text.empty()) {
      text = std::string(kTokens[below(kTokens.size())]);
      return;
    }
    switch (below(10)) {
      case 0: {  // flip one bit
        text[static_cast<std::size_t>(below(text.size()))] ^= static_cast<char>(1u << below(8));
        break;
      }
      case 1: {  // one structural or odd byte in place of another
        text[static_cast<std::size_t>(below(text.size()))] = kBytes[below(kBytes.size())];
        break;
      }
      case 2: {  // an odd token inserted
        text.insert(position(text), kTokens[below(kTokens.size())]);
        break;
      }
      case 3: {  // the digits of one number replaced by an edge value
        const std::size_t at = text.find_first_of("0123456789", static_cast<std::size_t>(below(text.size())));
        if (at == std::string::npos) break;
        const std::size_t end = std::min(text.find_first_not_of("0123456789", at), text.size());
        text.replace(at, end - at, kTokens[below(15)]);
        break;
      }
      case 4: {  // a range dropped
        const std::size_t at = static_cast<std::size_t>(below(text.size()));
        text.erase(at, 1 + below(16));
        break;
      }
      case 5: {  // a range repeated elsewhere
        const std::size_t at = static_cast<std::size_t>(below(text.size()));
        const std::string piece = text.substr(at, 1 + below(64));
        text.insert(position(text), piece);
        break;
      }
      case 6: {  // cut short, as a torn write leaves a file
        text.resize(static_cast<std::size_t>(below(text.size())));
        break;
      }
      case 7: {  // deep nesting
        const char open = "[{"[below(2)];
        text.insert(position(text), std::string(1 + below(4000), open));
        break;
      }
      case 8: {  // an 8-byte little-endian value over whatever was there
        static constexpr std::array<std::uint64_t, 9> kValues = {0, 1, 7, 8, 0xffffffffull, 0x100000000ull,
                                                                 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull};
        std::uint64_t value = below(2) ? kValues[below(kValues.size())] : text.size() + below(64) - 32;
        const std::size_t at = below(3) == 0 ? 0 : static_cast<std::size_t>(below(text.size()));
        for (int i = 0; i < 8 && at + i < text.size(); ++i, value >>= 8) text[at + i] = static_cast<char>(value & 0xff);
        break;
      }
      default: {  // two lines swapped, or a line removed (line-based formats)
        const std::size_t a = text.find('\n', static_cast<std::size_t>(below(text.size())));
        if (a == std::string::npos) break;
        const std::size_t b = text.find('\n', a + 1);
        if (b == std::string::npos) break;
        const std::string line = text.substr(a + 1, b - a);
        text.erase(a + 1, b - a);
        if (below(2)) text.insert(position(text), line);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

// The input as a C-style literal, cut to `limit` bytes: for failure messages.
inline std::string printable(std::string_view bytes, std::size_t limit = 400) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (bytes.size() > limit) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

}  // namespace llmrdzv::testing
