// GPT-2's byte-to-unicode map and its inverse (see byte_map.hpp).
#include "byte_map.hpp"

#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

bool maps_to_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

std::array<char32_t, 256> make_byte_chars() {
  std::array<char32_t, 256> chars{};
  char32_t next_extra = 256;
  for (unsigned b = 0; b < 256; ++b) chars[b] = maps_to_itself(b) ? b : next_extra++;
  return chars;
}

const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> chars = make_byte_chars();
  return chars;
}

// char -> byte for U+0000..U+01FF (-1 when the char is not in the map).
std::array<int, 512> make_char_bytes() {
  std::array<int, 512> bytes;
  bytes.fill(-1);
  for (unsigned b = 0; b < 256; ++b) bytes[byte_chars()[b]] = static_cast<int>(b);
  return bytes;
}

}  // namespace

const std::array<std::string, 256>& byte_symbols() {
  static const std::array<std::string, 256> symbols = [] {
    std::array<std::string, 256> s;
    for (unsigned b = 0; b < 256; ++b) utf8::append(s[b], byte_chars()[b]);
    return s;
  }();
  return symbols;
}

std::string unmap_bytes(std::string_view token) {
  static const std::array<int, 512> char_bytes = make_char_bytes();
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(token.data());
  std::size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp;
    std::size_t len = utf8::decode(p + pos, token.size() - pos, cp);
    if (len == 0) {  // not UTF-8 (cannot come from vocab.json): keep the byte
      out.push_back(token[pos++]);
      continue;
    }
    if (cp < char_bytes.size() && char_bytes[cp] >= 0) {
      out.push_back(static_cast<char>(char_bytes[cp]));
    } else {
      out.append(token.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace llmrdzv::tokenizer
