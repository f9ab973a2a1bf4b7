// HF tokenizers' tokenizer.json (what transformers 5's save_pretrained writes), read for the
// tokenizers this trainer implements (see tokenizer.hpp): GPT-2's byte-level BPE, Llama 3's
// byte-level BPE (its split pattern, whole pre-tokens from the vocabulary first) and Llama 2's
// SentencePiece-style BPE (spaces as "▁", byte fallback), each with special added tokens and a
// post-processor that may put a BOS before every text. Every component is checked against those:
// anything else would encode differently, so it is refused with an error naming the component (a
// JSON path). The writer produces GPT-2's form, for exported models.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "special_tokens.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

enum class JsonKind { gpt2_bpe, llama3_bpe, qwen2_bpe, sentencepiece_bpe };

// How SentencePiece-style BPE puts "▁" before a text (spaces are "▁" throughout):
// legacy = the normalizer Prepend("▁"): before every text between special tokens;
// first / always = Metaspace's prepend schemes: before the text at offset 0 / before every text,
// unless it already starts with "▁" (or a space); never = no prefix.
enum class SpacePrefix { never, legacy, first, always };

struct TokenizerJson {
  JsonKind kind = JsonKind::gpt2_bpe;
  std::vector<std::string> tokens;     // by id (model.vocab)
  std::vector<MergeRule> merges;       // rank order (model.merges)
  std::vector<SpecialToken> added;     // added_tokens (split out of the raw text); ids past the vocabulary extend it
  std::optional<SpecialToken> bos;     // what the post-processor puts before every text
  bool ignore_merges = false;          // a pre-token found in the vocabulary is one token
  SpacePrefix prefix = SpacePrefix::never;  // SentencePiece-style only
  std::optional<std::string> unk;      // SentencePiece-style: for characters without a token
  bool fuse_unk = false;
  bool byte_fallback = false;          // SentencePiece-style: "<0xNN>" tokens for such characters
  bool nfc = false;                    // the NFC normalizer (Qwen2's): byte-level kinds only
};

// Throws TokenizerError naming the file and the component.
TokenizerJson read_tokenizer_json(const std::filesystem::path& path, const std::string& text);

// The tokenizer.json transformers' LlamaTokenizer makes of `text` (SentencePiece-style), as its
// save_pretrained writes it: BPE with fuse_unk and byte fallback and no unknown token, no
// normalizer, Metaspace with `prefix` and no split, its decoder; the vocabulary, merges, added
// tokens and post-processor kept.
std::string llama_rebuilt_json(const std::filesystem::path& path, const std::string& text, SpacePrefix prefix);

// tokenizer.json's text as transformers 5 saves GPT-2's (the components read_tokenizer_json
// accepts, `specials` as the special added tokens: GPT-2's own has "<|endoftext|>"), so
// AutoTokenizer loads it without vocab.json and merges.txt.
std::string tokenizer_json_text(const std::vector<std::string>& tokens, const std::vector<MergeRule>& merges,
                                const std::vector<SpecialToken>& specials);

}  // namespace llmrdzv::tokenizer
