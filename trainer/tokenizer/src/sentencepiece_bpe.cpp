// SentencePiece-style BPE encoding (see sentencepiece_bpe.hpp).
#include "sentencepiece_bpe.hpp"

#include "llmrdzv/io/utf8.hpp"
#include "piece_cache.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr std::string_view kSpacePiece = "\xE2\x96\x81";  // "▁" (U+2581)

// Appends the ids of each character of `normalized`: its token, else its byte tokens, else the
// unknown token (a run of them fused into one with fuse_unk). With `word_starts`, also where each
// word starts in `ids`: at every "▁" after another character.
void character_ids(const Tokenizer::Model& model, std::string_view normalized, std::vector<TokenId>& ids,
                   std::vector<std::size_t>* word_starts) {
  bool after_space = false, after_unk = false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(normalized.data());
  for (std::size_t pos = 0; pos < normalized.size();) {
    char32_t cp = 0;
    const std::size_t len = bytes[pos] < 0x80 ? 1 : utf8::decode(bytes + pos, normalized.size() - pos, cp);
    const std::string_view character(normalized.data() + pos, len);
    pos += len;
    const bool space = character == kSpacePiece;
    if (word_starts && space && !after_space && !ids.empty()) word_starts->push_back(ids.size());
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
}

// The end of the word that starts at `begin`: the next "▁" that follows another character.
std::size_t word_end(std::string_view normalized, std::size_t begin) {
  std::size_t pos = begin;
  while (normalized.compare(pos, kSpacePiece.size(), kSpacePiece) == 0) pos += kSpacePiece.size();
  const std::size_t next = normalized.find(kSpacePiece, pos);
  return next == std::string_view::npos ? normalized.size() : next;
}

}  // namespace

void encode_sentencepiece(const Tokenizer::Model& model, std::string_view text, bool prefix,
                          std::vector<TokenId>& out, Tokenizer::PieceCache& cache) {
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
  std::vector<TokenId>& ids = cache.scratch;
  // When no token joins "▁" to a character before it (CutRule::before_spaces), no merge crosses a
  // word's start, so merging each word apart gives the ids of merging the whole text, without one
  // long merge queue. Where "▁" is a token of its own, a word also starts afresh (no unknown-token
  // run goes on into it), so its ids depend on its text alone and are cached.
  if (model.cut_rule == CutRule::before_spaces && model.index.contains(kSpacePiece)) {
    for (std::size_t begin = 0; begin < normalized.size();) {
      const std::size_t end = word_end(normalized, begin);
      const std::string_view word = std::string_view(normalized).substr(begin, end - begin);
      begin = end;
      if (const std::vector<TokenId>* known = cache.find(word)) {
        out.insert(out.end(), known->begin(), known->end());
        continue;
      }
      ids.clear();
      character_ids(model, word, ids, nullptr);
      model.merge_table.apply(ids);
      out.insert(out.end(), ids.begin(), ids.end());
      cache.remember(word, ids);
    }
    return;
  }
  ids.clear();
  std::vector<std::size_t> word_starts{0};
  character_ids(model, normalized, ids, model.cut_rule == CutRule::before_spaces ? &word_starts : nullptr);
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
