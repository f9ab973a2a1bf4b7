// The trainer's tokenizer, encoding exactly as HF's tokenizers do, torch-free (token ids are plain
// integers; the training loop turns spans of them into tensors). Kinds:
//  - bytes: the plain byte tokenizer (256 bytes + EOS) when no vocabulary is given;
//  - gpt2_bpe: GPT-2 byte-level BPE from Hugging Face's vocab.json + merges.txt or tokenizer.json
//    (also OPT-style, with a BOS before every text);
//  - llama3_bpe: Llama 3's byte-level BPE from tokenizer.json (its split pattern; a pre-token that
//    is itself in the vocabulary is one token, ignore_merges);
//  - qwen2_bpe: Qwen2's (and Qwen3's) byte-level BPE from tokenizer.json: NFC, then Llama 3's
//    pattern with single digits;
//  - sentencepiece_bpe: Llama 2's SentencePiece-style BPE from tokenizer.json (spaces as "▁", a
//    "▁" before the text, "<0xNN>" byte tokens for characters outside the vocabulary).
// tokenizer.json and vocab.json + merges.txt are read with the tokenizer_config.json next to them,
// as transformers 5 reads them (see from_tokenizer_json, from_directory); any other tokenizer is
// refused, never approximated.
//
// Encoding rules (all of them HF's, except the last, which HF cannot express):
//  - Special added tokens ("<|endoftext|>"; "<s>", "</s>"; Llama 3's "<|...|>") anywhere in the
//    text are their ids, the leftmost and then longest first; the text between is encoded on its own.
//    One with lstrip (rstrip) takes the whitespace before (after) it along (Phi-3's "<|end|>").
//  - qwen2_bpe first puts each text between special tokens in NFC (unicode_nfc.hpp).
//  - Byte-level kinds cut the text into pieces by their pattern (pretokenizer.hpp; Unicode 14
//    letter/number/White_Space classes), each piece's bytes go through GPT-2's byte-to-unicode
//    map, and BPE merges them by rank (lowest rank first, leftmost on ties).
//  - sentencepiece_bpe turns ' ' into "▁", puts "▁" before the text as the tokenizer says (before
//    every text between special tokens, or only before the first, and not when it starts with a
//    space), looks each character up (else its "<0xNN>" tokens, else the unknown token) and merges
//    the whole text by rank.
//  - encode() adds no BOS (HF's add_special_tokens=False); encode_document() does (HF's default).
//  - Invalid UTF-8: every byte that does not belong to a well-formed UTF-8 sequence is a token of
//    its own (its byte symbol; sentencepiece_bpe: its "<0xNN>" token), and it also cuts the text
//    around it as a special token would: encode(a + "\xff" + b) == encode(a + "<s>" + b) with
//    [byte token 0xff] for "<s>"'s id, for valid a and b. For byte-level kinds decode() returns the
//    exact bytes, so decode(encode(x)) == x for every byte string x.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrdzv/tokenizer/safe_cut.hpp"

namespace llmrdzv::tokenizer {

using TokenId = std::uint32_t;

// Bad vocabulary files or bad ids. The message names the file and line where there is one.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kEndOfText = "<|endoftext|>";

class Tokenizer {
 public:
  enum class Kind { bytes, gpt2_bpe, llama3_bpe, qwen2_bpe, sentencepiece_bpe };
  // A chunk of a longer text: the start, or a continuation (sentencepiece_bpe puts no "▁" before it).
  enum class Part { start, continuation };

  // Ids 0..255 are the bytes 0..255, 256 is EOS.
  static Tokenizer bytes();
  // GPT-2 BPE from these two files alone (no tokenizer_config.json). Throws TokenizerError naming
  // the file and line of the first problem. EOS is "<|endoftext|>"'s id in vocab.json, or the next
  // free id when the vocabulary lacks it (as HF).
  static Tokenizer from_files(const std::filesystem::path& vocab_json,
                              const std::filesystem::path& merges_txt);
  // From HF tokenizers' tokenizer.json (what transformers 5 saves), with the tokenizer_config.json
  // next to it when there is one, as AutoTokenizer combines them: its eos_token is the EOS (else
  // "<|endoftext|>", which must then be an added token), its add_bos_token and add_eos_token change
  // nothing (transformers 5 drops them next to a tokenizer.json: the file's post-processor puts the
  // BOS), and tokenizer_class
  // GPT2Tokenizer / LlamaTokenizer rebuild the tokenizer as transformers does (LlamaTokenizer: the
  // "▁" prefix from `legacy` and `add_prefix_space`). Throws TokenizerError naming the file and the
  // component (a JSON path) when it describes any other tokenizer: another model type (WordPiece,
  // Unigram), normalizer, pre-tokenizer or split pattern, a post-processor that adds anything but a
  // BOS before the text, single_word added tokens, non-special ones matched after a normalizer; or
  // when its vocabulary, merges or added tokens are bad.
  static Tokenizer from_tokenizer_json(const std::filesystem::path& tokenizer_json);
  // dir/tokenizer.json when it is there (as transformers' tokenizers read it; a vocab.json +
  // merges.txt next to it must hold the same vocabulary and merges, else TokenizerError), else
  // dir/vocab.json + dir/merges.txt, with dir/tokenizer_config.json when there is one as
  // AutoTokenizer builds GPT2Tokenizer from them (how OPT ships its tokenizer): its eos_token is
  // the EOS, bos_token the BOS when add_bos_token is true, and every special token it names
  // (*_token keys, extra special tokens, added_tokens_decoder; special_tokens_map.json's tokens
  // when it has no added_tokens_decoder) is split out of the text, at its vocabulary id or the next
  // id past the vocabulary. Throws TokenizerError naming the file and key when the config asks for
  // anything else: another tokenizer_class than GPT2Tokenizer(Fast), add_prefix_space,
  // add_eos_token or split_special_tokens true, whitespace-stripping or non-special added tokens,
  // an added_tokens_decoder id that is not the token's, an added_tokens.json, or keys that replace
  // the files (vocab, merges, post_processor, auto_map, ...). Without a config: plain GPT-2.
  static Tokenizer from_directory(const std::filesystem::path& dir);
  // What from_directory reads: "tokenizer.json", "vocab.json + merges.txt", either followed by
  // " + tokenizer_config.json" (and " + special_tokens_map.json" when the pair reads it) when
  // they are read too, tokenizer.json with " (the same as vocab.json + merges.txt)" when the pair is
  // also there, or empty when dir holds neither form.
  static std::string directory_tokenizer_files(const std::filesystem::path& dir);
  // The files through which dir carries a tokenizer this class does not read (SentencePiece
  // models, WordPiece vocab.txt, tokenizer_config.json and the like, or one half of vocab.json +
  // merges.txt), when it holds neither form from_directory reads.
  static std::vector<std::string> unreadable_tokenizer_files(const std::filesystem::path& dir);

  // Copies share the (immutable) vocabulary and start with an empty piece cache.
  Tokenizer(const Tokenizer& other);
  Tokenizer& operator=(const Tokenizer& other);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Not thread-safe (a piece cache is updated): give each thread its own copy.
  std::vector<TokenId> encode(std::string_view text) const;
  void encode_append(std::string_view text, std::vector<TokenId>& out, Part part = Part::start) const;
  // The BOS (when the tokenizer has one) and then encode(text): what HF's tokenizer(text) gives.
  std::vector<TokenId> encode_document(std::string_view text) const;

  // The bytes the ids stand for (special tokens as their text; sentencepiece_bpe: "▁" as ' ', so the
  // prefix encoding added comes back as a leading space). Throws TokenizerError on an id >= vocab_size().
  std::string decode(std::span<const TokenId> ids) const;

  // The bytes of text an id stands for: decode()'s for ordinary tokens, 0 for EOS, BOS and other
  // special tokens, which mark places rather than text (what bits per byte divides by).
  std::size_t text_bytes(TokenId id) const;

  Kind kind() const;
  TokenId eos_id() const;
  // The token HF's tokenizer(text) puts before every text (OPT's "</s>", Llama's "<s>",
  // "<|begin_of_text|>"), which run_clm therefore puts before every document; none for GPT-2.
  std::optional<TokenId> bos_id() const;
  // Where chunks of a document may be cut (see safe_cut.hpp).
  CutRule cut_rule() const;
  // The rule with the added tokens that absorb whitespace beside them (lstrip, rstrip): what a
  // reader cutting text into chunks for this tokenizer needs (safe_cut.hpp).
  CutPlaces cut_places() const;
  // Number of ids (the model's embedding rows must be at least this).
  std::size_t vocab_size() const;
  // The vocabulary entry of an id in HF's byte-mapped spelling (e.g. "Ġthe"); throws on a bad id.
  const std::string& token_text(TokenId id) const;
  // 64 hex characters of SHA-256 over the kind, every (id, token), every merge in rank order, EOS,
  // BOS, special tokens and the rest that changes encoding: equal fingerprints mean equal
  // encodings (and equal BOS). Keys the token cache.
  const std::string& fingerprint() const;

  // gpt2_bpe without a BOS and other special tokens, and bytes: writes dir/vocab.json and
  // dir/merges.txt in HF's format (the byte tokenizer too: its 257 entries and no merges), the same
  // as dir/tokenizer.json (HF tokenizers' format, as transformers 5 saves it), and
  // tokenizer_config.json + special_tokens_map.json naming "<|endoftext|>" the special token.
  // Other tokenizers: the files they were read from, byte for byte: tokenizer.json and
  // tokenizer_config.json (a minimal one naming the EOS and BOS when there was none), or vocab.json,
  // merges.txt, tokenizer_config.json (and special_tokens_map.json when it was read). Either way
  // AutoTokenizer.from_pretrained(dir) encodes the same.
  void save(const std::filesystem::path& dir) const;
  // The files save() writes: (name, content).
  std::vector<std::pair<std::string, std::string>> files() const;

  struct Model;
  struct PieceCache;

 private:
  explicit Tokenizer(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model_;
  std::unique_ptr<PieceCache> cache_;
};

// Text for display: `bytes` with every byte that is not part of a well-formed UTF-8 sequence
// replaced by U+FFFD, as HF's decode (Python's errors="replace") shows byte-level output.
std::string replace_invalid_utf8(std::string_view bytes);

}  // namespace llmrdzv::tokenizer
