// The immutable tokenizer that copies of a Tokenizer share, and how it is built from each source:
// the byte tokenizer, vocab.json + merges.txt, tokenizer.json with its tokenizer_config.json.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpe_merges.hpp"
#include "llmrdzv/tokenizer/safe_cut.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "special_tokens.hpp"
#include "tokenizer_json.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

inline constexpr TokenId kNoToken = ~TokenId{0};

struct Tokenizer::Model {
  Kind kind = Kind::bytes;
  std::vector<std::string> tokens;       // by id, as the vocabulary spells them (added tokens too)
  std::vector<std::string> token_bytes;  // by id, what decode() gives
  std::vector<MergeRule> merges;         // rank order
  BpeMerges merge_table{std::span<const BpeMerges::Merge>{}};
  std::unordered_map<std::string_view, TokenId> index;  // tokens -> id (views into `tokens`)
  // Byte-level: each byte's symbol. SentencePiece-style: each byte's "<0xNN>" token (kNoToken when
  // the vocabulary lacks it or there is no byte fallback).
  std::array<TokenId, 256> byte_ids{};
  SpecialTokenFinder specials;
  TokenId eos = 0;
  std::optional<TokenId> bos;
  bool ignore_merges = false;
  bool nfc = false;  // byte-level: NFC before the split (Qwen2's normalizer)
  SpacePrefix prefix = SpacePrefix::never;  // SentencePiece-style only, as are the next three
  std::optional<TokenId> unk;
  bool fuse_unk = false;
  CutRule cut_rule = CutRule::gpt2;
  std::string fingerprint;
  // The files it was read from (name, text as read), which save() writes back when
  // write_tokenizer_json cannot express the tokenizer (empty otherwise).
  std::vector<std::pair<std::string, std::string>> source_files;
};

std::shared_ptr<const Tokenizer::Model> bytes_model();
// vocab.json + merges.txt, with_config: with the tokenizer_config.json next to them when there is one.
std::shared_ptr<const Tokenizer::Model> vocab_files_model(const std::filesystem::path& vocab_json,
                                                          const std::filesystem::path& merges_txt, bool with_config);
// tokenizer.json, with the tokenizer_config.json next to it when there is one.
std::shared_ptr<const Tokenizer::Model> tokenizer_json_model(const std::filesystem::path& tokenizer_json);

// Indexes the tokens and fills in the byte tokens, decode texts, cut rule, merge table and
// fingerprint of a model whose tokens, merges, specials, EOS/BOS and kind are set. `source` names
// it in errors.
std::shared_ptr<const Tokenizer::Model> finish_model(std::shared_ptr<Tokenizer::Model> model, const std::string& source,
                                                     bool byte_fallback);

// Throws TokenizerError: `what` (a file and key) describes a tokenizer this trainer does not
// implement, for the reason `why`.
[[noreturn]] void refuse_unsupported(const std::string& what, const std::string& why);

// Whether save() can write the tokenizer as GPT-2's files (write_tokenizer_json and the rest).
bool is_plain_gpt2(const Tokenizer::Model& model);

}  // namespace llmrdzv::tokenizer
