// Unicode's canonical composition (NFC), the normalizer of Qwen2's and Qwen3's tokenizer.json:
// HF applies it to the text before splitting, so "e" + U+0301 and "é" encode alike.
#pragma once

#include <string>
#include <string_view>

namespace llmrdzv::tokenizer {

// Whether nfc(text) == text, cheaply: no code point that NFC changes or that combines with what is
// before it (true for all text below U+0300, for CJK, emoji and most scripts).
bool is_nfc_quick(std::string_view text);

// NFC of `text`: full canonical decomposition, canonical ordering of combining marks, then
// canonical composition (Hangul by arithmetic). Bytes that are not well-formed UTF-8 are kept as
// they are and, like the pre-tokenizer (see tokenizer.hpp), end the text around them.
std::string nfc(std::string_view text);

}  // namespace llmrdzv::tokenizer
