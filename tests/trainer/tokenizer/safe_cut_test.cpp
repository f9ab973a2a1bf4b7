// last_safe_cut: every place it offers splits the text into parts whose GPT-2 (or Llama 3) pieces,
// one part after the other, are exactly the pieces of the whole text (so their ids are too), checked on
// random text rich in whitespace runs, line endings, Unicode spaces, letters, digits, contractions
// and invalid UTF-8; and the places it must refuse.
#include "llmrdzv/tokenizer/safe_cut.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "pretokenizer.hpp"

using llmrdzv::tokenizer::last_character_boundary;
using llmrdzv::tokenizer::last_safe_cut;
using llmrdzv::tokenizer::CutRule;
using llmrdzv::tokenizer::PieceScanner;
using llmrdzv::tokenizer::SplitPattern;

namespace {

std::vector<std::string> pieces(std::string_view text, SplitPattern pattern) {
  std::vector<std::string> out;
  PieceScanner scanner(text, pattern);
  for (std::string_view piece; scanner.next(piece);) out.emplace_back(piece);
  return out;
}

std::string random_text(std::mt19937& rng) {
  static const char* const kFragments[] = {
      "a", "word", "\xc3\xa9t\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "42", "3.14", "!?", "'s", "'ll", " ", "  ", "   ",
      "\n", "\n\n", "\r\n", "\t", " \n", "\n ", "\t\t", "\xe3\x80\x80" /* U+3000 */, "\xc2\xa0" /* NBSP */,
      "\xc2\x85" /* NEL */, "\xff", "\xe4\xb8" /* truncated */, "\xcc\x81" /* combining acute */, "x\ny", "a b",
      "'S", "(", ".", "\r", "\t\n", "123456"};
  std::uniform_int_distribution<std::size_t> pick(0, std::size(kFragments) - 1);
  std::uniform_int_distribution<int> length(1, 40);
  std::string text;
  for (int i = length(rng); i > 0; --i) text += kFragments[pick(rng)];
  return text;
}

}  // namespace

TEST_CASE("every safe cut keeps the pre-tokeniser's pieces", "[tokenizer][safe-cut]") {
  for (const auto& [pattern, rule] : {std::pair{SplitPattern::gpt2, CutRule::gpt2}, std::pair{SplitPattern::llama3, CutRule::llama3}}) {
    INFO((pattern == SplitPattern::gpt2 ? "GPT-2" : "Llama 3"));
    std::mt19937 rng(2024);
    std::size_t cuts = 0;
    for (int round = 0; round < 2000; ++round) {
      const std::string text = random_text(rng);
      const auto whole = pieces(text, pattern);
      // As a chunked reader sees it: only a prefix of the text is known when it looks for a cut.
      for (std::size_t known = 1; known <= text.size(); ++known) {
        const std::size_t p = last_safe_cut(std::string_view(text).substr(0, known), rule);
        if (p == 0) continue;
        ++cuts;
        REQUIRE(p < known);
        auto parts = pieces(std::string_view(text).substr(0, p), pattern);
        const auto rest = pieces(std::string_view(text).substr(p), pattern);
        parts.insert(parts.end(), rest.begin(), rest.end());
        INFO("text (" << text.size() << " bytes) cut at " << p << " of " << known << " known");
        REQUIRE(parts == whole);
      }
    }
    CHECK(cuts > 5000);  // the rule is not vacuous
  }
}

TEST_CASE("safe cuts are where a lone line break or space sits between non-whitespace", "[tokenizer][safe-cut]") {
  CHECK(last_safe_cut("a\nb") == 2);
  CHECK(last_safe_cut("ab cd") == 2);
  CHECK(last_safe_cut("first line\nsecond") == 11);
  CHECK(last_safe_cut("\xe4\xb8\xad\n\xe6\x96\x87") == 4);  // CJK lines
  // A run of whitespace ends differently at the end of a text than before a word: no cut in it.
  CHECK(last_safe_cut("a  \nX") == 0);
  CHECK(last_safe_cut("a \n\nX") == 0);
  CHECK(last_safe_cut("a\r\nb") == 0);
  CHECK(last_safe_cut("a \xe3\x80\x80" "b") == 0);  // U+3000 after the space
  CHECK(last_safe_cut("nospaceatall") == 0);
  CHECK(last_safe_cut("a\n\xe4\xb8") == 0);  // the next character is cut off: unknown
  CHECK(last_safe_cut("\xff\n\xff") == 2);    // invalid bytes are pieces of their own
}

TEST_CASE("Llama 3 cuts only after line breaks, SentencePiece-style BPE before spaces when its vocabulary allows",
          "[tokenizer][safe-cut]") {
  CHECK(last_safe_cut("a\tb", CutRule::gpt2) == 2);
  CHECK(last_safe_cut("a\tb", CutRule::llama3) == 0);  // "\tb" is one piece
  CHECK(last_safe_cut("a\nb", CutRule::llama3) == 2);
  CHECK(last_safe_cut("ab cd", CutRule::llama3) == 2);
  CHECK(last_safe_cut("ab cd", CutRule::before_spaces) == 2);
  CHECK(last_safe_cut("a  b", CutRule::before_spaces) == 1);  // not inside a run of spaces
  CHECK(last_safe_cut("a\xe2\x96\x81 b", CutRule::before_spaces) == 0);
  CHECK(last_safe_cut("a\nb", CutRule::before_spaces) == 0);
  CHECK(last_safe_cut("ab cd", CutRule::none) == 0);
}

TEST_CASE("a forced cut ends after the last complete character", "[tokenizer][safe-cut]") {
  CHECK(last_character_boundary("abc") == 3);
  CHECK(last_character_boundary("ab\xc3\xa9") == 4);          // é complete
  CHECK(last_character_boundary("ab\xc3") == 2);                // é's lead byte alone
  CHECK(last_character_boundary("a\xe4\xb8\xad") == 4);       // 中 complete
  CHECK(last_character_boundary("a\xe4\xb8") == 1);            // 中 cut off
  CHECK(last_character_boundary("a\xf0\x9f\x98") == 1);       // an emoji cut off
  CHECK(last_character_boundary("a\xff") == 2);                 // an invalid byte is a character
  CHECK(last_character_boundary("\x80\x80") == 2);             // stray continuation bytes too
}
