// GPT-2's byte-to-unicode map: each byte gets a printable character so BPE tokens are strings.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes to
// U+0100, U+0101, ... in byte order.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace llmrdzv::tokenizer {

// UTF-8 spelling of each byte's character.
const std::array<std::string, 256>& byte_symbols();

// The bytes a byte-mapped token spells; characters outside the map (added tokens such as
// "<|endoftext|>" are plain ASCII, so inside it) are kept as their UTF-8 bytes.
std::string unmap_bytes(std::string_view token);

}  // namespace llmrdzv::tokenizer
