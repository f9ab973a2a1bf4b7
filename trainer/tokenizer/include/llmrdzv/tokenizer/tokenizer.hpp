// The trainer's tokenizer: GPT-2 byte-level BPE read from Hugging Face's vocab.json + merges.txt
// or from HF tokenizers' tokenizer.json, encoding exactly as HF's GPT2TokenizerFast does, or the plain byte tokenizer (256 bytes + EOS)
// when no vocabulary is given. Torch-free: token ids are plain integers; the training loop turns
// spans of them into tensors.
//
// Encoding rules (all of them HF's, except the last, which HF cannot express):
//  - "<|endoftext|>" anywhere in the text is the EOS token; the text between is encoded on its own.
//  - The text is cut into pieces by GPT-2's pattern
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//    (Unicode 14 letter/number/White_Space classes), each piece's bytes go through GPT-2's
//    byte-to-unicode map, and BPE merges them by rank (lowest rank first, leftmost on ties).
//  - Invalid UTF-8: every byte that does not belong to a well-formed UTF-8 sequence is a piece of
//    its own (one token: that byte's symbol), and it also cuts the text around it: the valid runs
//    on either side are encoded as if they were separate texts. So encode(a + "\xff" + b) ==
//    encode(a) + [byte token 0xff] + encode(b) for valid a and b. decode() returns the exact bytes,
//    so decode(encode(x)) == x for every byte string x.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
  enum class Kind { bytes, gpt2_bpe };

  // Ids 0..255 are the bytes 0..255, 256 is EOS.
  static Tokenizer bytes();
  // GPT-2 BPE. Throws TokenizerError naming the file and line of the first problem. EOS is
  // "<|endoftext|>"'s id in vocab.json, or the next free id when the vocabulary lacks it (as HF).
  static Tokenizer from_files(const std::filesystem::path& vocab_json,
                              const std::filesystem::path& merges_txt);
  // GPT-2 BPE from HF tokenizers' tokenizer.json (what transformers 5 saves). Throws
  // TokenizerError naming the file and the component when it describes any other tokenizer
  // (another model type, normalizer, pre-tokenizer or split pattern, a post-processor that adds
  // tokens, added tokens other than "<|endoftext|>"), or when its vocabulary or merges are bad.
  static Tokenizer from_tokenizer_json(const std::filesystem::path& tokenizer_json);
  // dir/tokenizer.json when it is there (as transformers' tokenizers read it; a vocab.json +
  // merges.txt next to it must describe the same tokenizer, else TokenizerError), else
  // dir/vocab.json + dir/merges.txt.
  static Tokenizer from_directory(const std::filesystem::path& dir);
  // What from_directory reads: "tokenizer.json", "tokenizer.json (the same as vocab.json +
  // merges.txt)", "vocab.json + merges.txt", or empty when dir holds neither.
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
  void encode_append(std::string_view text, std::vector<TokenId>& out) const;

  // The bytes the ids stand for (EOS as "<|endoftext|>"). Throws TokenizerError on an id >= vocab_size().
  std::string decode(std::span<const TokenId> ids) const;

  Kind kind() const;
  TokenId eos_id() const;
  // Number of ids (the model's embedding rows must be at least this).
  std::size_t vocab_size() const;
  // The vocabulary entry of an id in HF's byte-mapped spelling (e.g. "Ġthe"); throws on a bad id.
  const std::string& token_text(TokenId id) const;
  // 64 hex characters of SHA-256 over the kind, every (id, token) and every merge in rank order:
  // equal fingerprints mean equal encodings. Keys the token cache.
  const std::string& fingerprint() const;

  // Writes dir/vocab.json and dir/merges.txt in HF's format (the byte tokenizer too: its 257
  // entries and no merges), the same as dir/tokenizer.json (HF tokenizers' format, as
  // transformers 5 saves it), and tokenizer_config.json + special_tokens_map.json naming
  // "<|endoftext|>" the special token, so AutoTokenizer.from_pretrained(dir) encodes the same.
  void save(const std::filesystem::path& dir) const;

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
