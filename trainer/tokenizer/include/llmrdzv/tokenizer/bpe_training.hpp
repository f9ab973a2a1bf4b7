// Training a byte-level BPE vocabulary exactly as HF tokenizers' ByteLevelBPETokenizer.train does
// (its BpeTrainer with the ByteLevel pre-tokenizer, no prefix space, GPT-2's split pattern), so that
// `trainer tokenizer` can make the vocabulary a run trains on where no hub is reachable:
//  - words: every sequence fed is cut into pieces by GPT-2's pattern; equal pieces are counted once
//    with their number (HF feeds a file line by line, each line with its "\n" one sequence);
//  - the vocabulary starts with the special tokens in the order given (a repeated one once), then
//    the 256 byte symbols in code point order of their characters (one that equals a special token
//    is that token);
//  - merges: repeatedly the adjacent pair with the highest count over all words (the pair of lower
//    ids on ties), as HF's trainer picks them from its queue of pair counts that it updates lazily,
//    until the vocabulary has vocab_size tokens, no pair is left, or the best count is below
//    min_frequency. A merge whose token already exists (two ways to spell "abc") adds no token;
//    a pair HF's queue merges twice keeps only its later rank, as HF's saved files have it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmrdzv::tokenizer {

// Pieces (raw bytes, before the byte-to-unicode map) and how often each occurs.
class WordCounts {
 public:
  // Counts the pieces of one sequence; `text` must be well-formed UTF-8 (HF refuses other text).
  void add_sequence(std::string_view text);
  // Adds another counter's words (a worker thread's) to these.
  void merge(WordCounts&& other);
  std::size_t distinct() const { return counts_.size(); }

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>>;
  const Map& counts() const { return counts_; }

 private:
  Map counts_;
};

struct BpeTrainingOptions {
  std::size_t vocab_size = 30000;
  std::uint64_t min_frequency = 2;
  std::vector<std::string> special_tokens;
};

struct TrainedBpe {
  std::vector<std::string> tokens;  // by id, byte-mapped spelling (vocab.json's)
  struct Merge {
    std::uint32_t left;
    std::uint32_t right;
    std::uint32_t merged;
  };
  std::vector<Merge> merges;                // rank order
  std::vector<std::uint32_t> special_ids;   // of options.special_tokens, in their order
};

// Called after every merge with (merges so far, vocabulary size so far).
using MergeProgress = std::function<void(std::size_t, std::size_t)>;

// Throws TokenizerError when vocab_size is smaller than the special tokens plus the 256 bytes.
TrainedBpe train_bpe(const WordCounts& words, const BpeTrainingOptions& options, const MergeProgress& progress = {});

// Writes tokenizer.json, vocab.json, merges.txt, tokenizer_config.json and special_tokens_map.json
// into dir (created if missing) for transformers' AutoTokenizer and the trainer's --tokenizer_name:
// GPT-2's byte-level BPE whose first special token is its EOS (and BOS and unknown token, as
// GPT-2's "<|endoftext|>"), the others extra special tokens. Needs at least one special token.
void save_trained_bpe(const TrainedBpe& bpe, const std::filesystem::path& dir);

}  // namespace llmrdzv::tokenizer
