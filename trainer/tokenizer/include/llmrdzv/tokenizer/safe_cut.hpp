// Where a text may be cut so that encoding the two parts one after the other gives exactly the ids
// of encoding it whole: places where GPT-2's pre-tokeniser ends a piece whatever comes before or
// after, so a corpus can be tokenised in bounded chunks with HF's results.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmrdzv::tokenizer {

// The largest p in [1, text.size()) that is such a place, or 0 when there is none:
//  - just after a lone ASCII whitespace character other than ' ' ('\n', '\t', ...) with a
//    non-whitespace character on either side ("a\nb"): the pre-tokeniser makes it a piece of its
//    own (a run of several whitespace characters would be split differently at the end of a text);
//  - just before a lone ' ' with a non-whitespace character on either side ("a b"): the space
//    starts the next piece.
// Whitespace is Unicode's, as in the pattern's \s; a byte that is not valid UTF-8 is a piece of
// its own and counts as non-whitespace. A character cut off by the end of `text` is unknown, so
// no place next to it qualifies. The byte tokenizer could be cut anywhere; this holds for it too.
std::size_t last_safe_cut(std::string_view text);

// The end of the last complete character of `text` (a byte that is not valid UTF-8 counts as
// one): where a cut that has to be made anyway splits no character. text.size() when the text
// ends with a complete character.
std::size_t last_character_boundary(std::string_view text);

}  // namespace llmrdzv::tokenizer
