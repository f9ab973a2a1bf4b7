// Runs of Unicode whitespace (\s, the White_Space property, as HF's regexes read it) beside a
// position: the whitespace an added token with lstrip or rstrip absorbs, and which chunk cuts must
// not separate from it.
#pragma once

#include <cstddef>
#include <string_view>

namespace llmrdzv::tokenizer {

// The start of the run of whitespace characters that ends at `end`, going back no further than
// `floor` (end itself when text[floor, end) ends with none).
std::size_t whitespace_run_start(std::string_view text, std::size_t end, std::size_t floor = 0);

// The end of the run of whitespace characters that starts at `begin`.
std::size_t whitespace_run_end(std::string_view text, std::size_t begin);

}  // namespace llmrdzv::tokenizer
