// Where a text may be cut so that encoding the two parts one after the other (the second as a
// continuation, Tokenizer::Part::continuation) gives exactly the ids of encoding it whole: places
// where the tokenizer ends a piece whatever comes before or after, so a corpus can be tokenised in
// bounded chunks with HF's results. Each kind of tokenizer has its rule (Tokenizer::cut_rule()).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::tokenizer {

enum class CutRule {
  gpt2,           // GPT-2's pattern (and the byte tokenizer), below
  llama3,         // Llama 3's pattern: as gpt2, but only '\r' and '\n' are cut after (a tab or other
                  // whitespace before a letter starts the letter's piece)
  before_spaces,  // SentencePiece-style BPE with no token that joins "▁" to a character before it:
                  // before a ' ' that follows a character other than ' ' and "▁"
  none,           // SentencePiece-style BPE whose merges may cross spaces: no place is safe
};

// The largest p in [1, text.size()) that is such a place, or 0 when there is none. CutRule::gpt2:
//  - just after a lone ASCII whitespace character other than ' ' ('\n', '\t', ...) with a
//    non-whitespace character on either side ("a\nb"): the pre-tokeniser makes it a piece of its
//    own (a run of several whitespace characters would be split differently at the end of a text);
//  - just before a lone ' ' with a non-whitespace character on either side ("a b"): the space
//    starts the next piece.
// Whitespace is Unicode's, as in the pattern's \s; a byte that is not valid UTF-8 is a piece of
// its own and counts as non-whitespace. A character cut off by the end of `text` is unknown, so
// no place next to it qualifies. The byte tokenizer could be cut anywhere; this holds for it too.
std::size_t last_safe_cut(std::string_view text, CutRule rule = CutRule::gpt2);

// A tokenizer's rule and its added tokens that absorb the whitespace beside them (lstrip: before,
// rstrip: after; Tokenizer::cut_places()). Encoded apart, the two parts of a text cut in such
// whitespace would leave it to the text, so no place in the run of whitespace after an rstrip
// token or before an lstrip token qualifies, nor the places at either end of that run.
struct CutPlaces {
  CutPlaces(CutRule rule_in = CutRule::gpt2) : rule(rule_in) {}  // NOLINT: a rule alone is a CutPlaces
  CutRule rule;
  std::vector<std::string> lstrip;
  std::vector<std::string> rstrip;
};
std::size_t last_safe_cut(std::string_view text, const CutPlaces& places);

// The end of the last complete character of `text` (a byte that is not valid UTF-8 counts as
// one): where a cut that has to be made anyway splits no character. text.size() when the text
// ends with a complete character.
std::size_t last_character_boundary(std::string_view text);

}  // namespace llmrdzv::tokenizer
