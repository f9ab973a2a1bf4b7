// Added special tokens ("<|endoftext|>", "<s>", Llama 3's "<|begin_of_text|>", ...) found in a
// text as HF's added vocabulary finds them before anything else runs: at the leftmost place where
// any of them starts, the longest one that matches there. The text between them is encoded on its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::tokenizer {

struct SpecialToken {
  std::string content;
  std::uint32_t id;
};

class SpecialTokenFinder {
 public:
  explicit SpecialTokenFinder(std::vector<SpecialToken> tokens = {});

  struct Match {
    std::size_t pos = std::string_view::npos;  // npos: none
    std::size_t length = 0;
    std::uint32_t id = 0;
  };
  // The first match at or after `from`.
  Match find(std::string_view text, std::size_t from) const;

  const std::vector<SpecialToken>& tokens() const { return tokens_; }

 private:
  std::vector<SpecialToken> tokens_;  // longest first
  std::string first_bytes_;           // each token's first byte, once
};

}  // namespace llmrdzv::tokenizer
