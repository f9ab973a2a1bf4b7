// Added tokens ("<|endoftext|>", "<s>", Llama 3's "<|begin_of_text|>", Qwen2's "<tool_call>", ...)
// found in a text as HF's added vocabulary finds them before anything else runs: at the leftmost
// place where any of them starts, the longest one that matches there. A token with lstrip takes
// the whitespace before it (not before the previous token's end), one with rstrip the whitespace
// after it (Phi-3's "<|assistant|>"). The text between them is encoded on its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::tokenizer {

struct SpecialToken {
  std::string content;
  std::uint32_t id;
  bool lstrip = false;  // absorbs the whitespace before it
  bool rstrip = false;  // absorbs the whitespace after it
};

class SpecialTokenFinder {
 public:
  explicit SpecialTokenFinder(std::vector<SpecialToken> tokens = {});

  struct Match {
    std::size_t pos = std::string_view::npos;  // npos: none; else where the token and the whitespace it absorbs start
    std::size_t length = 0;                    // the token and the whitespace it absorbs
    std::uint32_t id = 0;
  };
  // The first match at or after `from`, where the previous match ended (lstrip goes back no further).
  Match find(std::string_view text, std::size_t from) const;

  const std::vector<SpecialToken>& tokens() const { return tokens_; }

 private:
  std::vector<SpecialToken> tokens_;  // longest first
  std::string first_bytes_;           // each token's first byte, once
};

}  // namespace llmrdzv::tokenizer
