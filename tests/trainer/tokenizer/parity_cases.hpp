// Texts on which the tokenizer tests compare our ids with HF's: hand-picked hard cases (whitespace
// runs with \r\n and tabs, CJK, emoji with ZWJ sequences, combining marks, digit runs, contractions
// in upper case, special tokens, invalid UTF-8), random strings from the atoms the split patterns
// treat specially, and valid text to train test vocabularies on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llmrdzv::test {

const std::vector<std::string>& hard_cases();
std::vector<std::string> random_cases(std::size_t count, std::uint32_t seed);
// The valid hard cases and some prose, repeated.
std::string training_text();

}  // namespace llmrdzv::test
