// Leftmost-longest special token search (see special_tokens.hpp): the text is scanned for the
// tokens' first bytes only, so text without special tokens costs one find_first_of.
#include "special_tokens.hpp"

#include <algorithm>

#include "whitespace_run.hpp"

namespace llmrdzv::tokenizer {

SpecialTokenFinder::SpecialTokenFinder(std::vector<SpecialToken> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const SpecialToken& t) { return t.content.empty(); });
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const SpecialToken& a, const SpecialToken& b) { return a.content.size() > b.content.size(); });
  for (const SpecialToken& t : tokens_) {
    if (first_bytes_.find(t.content[0]) == std::string::npos) first_bytes_ += t.content[0];
  }
}

SpecialTokenFinder::Match SpecialTokenFinder::find(std::string_view text, std::size_t from) const {
  if (tokens_.empty()) return {};
  for (std::size_t pos = text.find_first_of(first_bytes_, from); pos != std::string_view::npos;
       pos = text.find_first_of(first_bytes_, pos + 1)) {
    const std::string_view rest = text.substr(pos);
    for (const SpecialToken& t : tokens_) {
      if (!rest.starts_with(t.content)) continue;
      const std::size_t start = t.lstrip ? whitespace_run_start(text, pos, from) : pos;
      const std::size_t stop = t.rstrip ? whitespace_run_end(text, pos + t.content.size()) : pos + t.content.size();
      return {start, stop - start, t.id};
    }
  }
  return {};
}

}  // namespace llmrdzv::tokenizer
