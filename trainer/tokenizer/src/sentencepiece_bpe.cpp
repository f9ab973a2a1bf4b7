// SentencePiece-style BPE encoding (see sentencepiece_bpe.hpp).
#include "sentencepiece_bpe.hpp"

#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr std::string_view kSpacePiece = "\xE2\x96\x81";  // "▁" (U+2581)

}  // namespace

void encode_sentencepiece(const Tokenizer::Model& model, std::string_view text, bool prefix,
                          std::vector<TokenId>& out, std::vector<TokenId>& ids) {
  std::string normalized;
  normalized.reserve(text.size() + kSpacePiece.size() * 2);
  if (prefix) normalized += kSpacePiece;
  for (const char c : text) {
    if (c == ' ') normalized += kSpacePiece;
    else normalized += c;
  }
  if (model.ignore_merges) {
    if (const auto it = model.index.find(normalized); it != model.index.end()) {
      out.push_back(it->second);
      return;
    }
  }
  ids.clear();
  // Where the words start in `ids`: at every "▁" after another character. When no token joins "▁"
  // to a character before it (CutRule::before_spaces), no merge crosses such a start, so merging
  // each word apart gives the ids of merging the whole text, without one long merge queue.
  std::vector<std::size_t> word_starts{0};
  const bool by_words = model.cut_rule == CutRule::before_spaces;
  bool after_space = false, after_unk = false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(normalized.data());
  for (std::size_t pos = 0; pos < normalized.size();) {
    char32_t cp = 0;
    const std::size_t len = bytes[pos] < 0x80 ? 1 : utf8::decode(bytes + pos, normalized.size() - pos, cp);
    const std::string_view character(normalized.data() + pos, len);
    pos += len;
    const bool space = character == kSpacePiece;
    if (by_words && space && !after_space && !ids.empty()) word_starts.push_back(ids.size());
    after_space = space;
    if (const auto it = model.index.find(character); it != model.index.end()) {
      ids.push_back(it->second);
      after_unk = false;
      continue;
    }
    bool all_bytes = true;
    for (const char b : character) all_bytes = all_bytes && model.byte_ids[static_cast<unsigned char>(b)] != kNoToken;
    if (all_bytes) {
      for (const char b : character) ids.push_back(model.byte_ids[static_cast<unsigned char>(b)]);
      after_unk = false;
    } else if (model.unk) {
      if (!(model.fuse_unk && after_unk)) ids.push_back(*model.unk);
      after_unk = true;
    }
  }
  word_starts.push_back(ids.size());
  std::vector<TokenId> word;
  for (std::size_t w = 0; w + 1 < word_starts.size(); ++w) {
    const auto begin = ids.begin();
    word.assign(begin + static_cast<std::ptrdiff_t>(word_starts[w]), begin + static_cast<std::ptrdiff_t>(word_starts[w + 1]));
    model.merge_table.apply(word);
    out.insert(out.end(), word.begin(), word.end());
  }
}

}  // namespace llmrdzv::tokenizer
