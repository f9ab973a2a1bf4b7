// The three Unicode classes GPT-2's split pattern distinguishes (\p{L}, \p{N}, \s) and "other".
#pragma once

#include <cstdint>

namespace llmrdzv::tokenizer {

enum class CodePointClass : std::uint8_t { kOther, kLetter, kNumber, kSpace };

struct CodePointRange {
  std::uint32_t first;
  std::uint32_t last;
  CodePointClass cls;
};

CodePointClass classify(char32_t cp);

}  // namespace llmrdzv::tokenizer
