// Deterministic test corpora for the data tests: prose-like lines with punctuation, digits,
// indentation and non-ASCII letters, so BPE and chunk cutting have something to work on.
#pragma once

#include <cstdint>
#include <string>

namespace llmrdzv::test {

inline std::string corpus_text(std::uint32_t seed, std::size_t lines) {
  static const char* const kWords[] = {"the", "rank", "world", "café", "    indented", "block", "token's",
                                       "12345", "x", "déjà", "vu", "(parens)", "emoji😀", "tab\tstop"};
  std::uint64_t state = seed * 2654435761u + 1;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  std::string text;
  for (std::size_t line = 0; line < lines; ++line) {
    const std::uint32_t words = 1 + next() % 9;
    for (std::uint32_t w = 0; w < words; ++w) {
      if (w > 0) text += ' ';
      text += kWords[next() % (sizeof kWords / sizeof kWords[0])];
    }
    text += next() % 4 == 0 ? "\n\n" : "\n";
  }
  return text;
}

}  // namespace llmrdzv::test
