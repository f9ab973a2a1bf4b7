// Byte-level BPE training (see bpe_training.hpp). The merge loop follows HF's BpeTrainer step for
// step, because which pair wins, and when, depends on its details: a max-heap of (count, pair,
// words) entries whose counts are checked against the live pair counts only when popped (a stale
// entry goes back with the live count), a popped entry merges only the words it lists, and the
// pairs a merge creates enter the heap as new entries listing the words they appeared in. Faster
// than HF's by its data layout: every word's symbols in one array, pair counts in an open-addressing
// table, and each merge's changes sorted by pair instead of gathered in hash maps of hash sets.
#include "llmrdzv/tokenizer/bpe_training.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <numeric>
#include <unordered_set>

#include "byte_map.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "pretokenizer.hpp"
#include "special_tokens.hpp"
#include "tokenizer_json.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

void WordCounts::add_sequence(std::string_view text) {
  PieceScanner scanner(text);
  std::string_view piece;
  while (scanner.next(piece)) {
    const auto it = counts_.find(piece);
    if (it != counts_.end()) {
      ++it->second;
    } else {
      counts_.emplace(std::string(piece), 1);
    }
  }
}

void WordCounts::merge(WordCounts&& other) {
  if (counts_.empty()) {
    counts_ = std::move(other.counts_);
    return;
  }
  for (auto& node : other.counts_) counts_[node.first] += node.second;
  other.counts_.clear();
}

namespace {

// A pair of token ids as one key; ordered as HF orders its (left, right) tuples.
using Pair = std::uint64_t;
Pair pair_of(std::uint32_t left, std::uint32_t right) { return (static_cast<Pair>(left) << 32) | right; }
std::uint32_t left_of(Pair p) { return static_cast<std::uint32_t>(p >> 32); }
std::uint32_t right_of(Pair p) { return static_cast<std::uint32_t>(p); }

// Pair -> count, open addressing (HF: a hash map of i32; counts here do not overflow).
class PairCounts {
 public:
  std::int64_t& operator[](Pair pair) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    return slot_for(pair).count;
  }
  std::int64_t get(Pair pair) const {
    if (slots_.empty()) return 0;
    std::size_t i = mix(pair) & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].pair == pair) return slots_[i].count;
      i = (i + 1) & (slots_.size() - 1);
    }
    return 0;
  }

 private:
  struct Slot {
    Pair pair = 0;
    std::int64_t count = 0;
    bool used = false;
  };
  static std::uint64_t mix(std::uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }
  Slot& slot_for(Pair pair) {
    std::size_t i = mix(pair) & (slots_.size() - 1);
    while (slots_[i].used && slots_[i].pair != pair) i = (i + 1) & (slots_.size() - 1);
    if (!slots_[i].used) {
      slots_[i] = Slot{pair, 0, true};
      ++size_;
    }
    return slots_[i];
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(1024, old.size() * 2), Slot{});
    size_ = 0;
    for (const Slot& s : old) {
      if (s.used) slot_for(s.pair).count = s.count;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

// An entry of HF's queue: a pair, its count when pushed, and the words to merge it in.
struct QueueEntry {
  std::uint64_t count;
  Pair pair;
  std::vector<std::uint32_t> words;
};
// HF's Merge ordering: higher count first, then the lower pair.
struct Before {
  bool operator()(const QueueEntry& a, const QueueEntry& b) const {
    return a.count != b.count ? a.count < b.count : a.pair > b.pair;
  }
};

// A pair appearing (+1) or disappearing (-1) in a word.
struct Change {
  Pair pair;
  std::uint32_t word;
  int delta;
  bool operator<(const Change& other) const { return pair != other.pair ? pair < other.pair : word < other.word; }
};

// Every word's symbols in one array; a merge shortens a word in place.
class Words {
 public:
  explicit Words(const WordCounts& words, const std::array<std::uint32_t, 256>& byte_ids) {
    start_.reserve(words.distinct());
    for (const auto& [word, count] : words.counts()) {
      start_.push_back(symbols_.size());
      length_.push_back(static_cast<std::uint32_t>(word.size()));
      counts_.push_back(count);
      for (const char c : word) symbols_.push_back(byte_ids[static_cast<unsigned char>(c)]);
    }
  }
  std::size_t size() const { return start_.size(); }
  std::uint64_t count(std::uint32_t w) const { return counts_[w]; }
  const std::uint32_t* begin(std::uint32_t w) const { return symbols_.data() + start_[w]; }
  std::uint32_t length(std::uint32_t w) const { return length_[w]; }

  // HF's Word::merge: left to right, each (left, right) becomes `merged`; records the pairs that
  // disappear and appear next to it.
  void merge(std::uint32_t w, Pair pair, std::uint32_t merged, std::vector<Change>& changes) {
    const std::uint32_t left = left_of(pair), right = right_of(pair);
    std::uint32_t* s = symbols_.data() + start_[w];
    const std::uint32_t n = length_[w];
    std::uint32_t out = 0;
    for (std::uint32_t i = 0; i < n;) {
      if (i + 1 < n && s[i] == left && s[i + 1] == right) {
        if (out > 0) {
          changes.push_back({pair_of(s[out - 1], left), w, -1});
          changes.push_back({pair_of(s[out - 1], merged), w, +1});
        }
        if (i + 2 < n) {
          changes.push_back({pair_of(right, s[i + 2]), w, -1});
          changes.push_back({pair_of(merged, s[i + 2]), w, +1});
        }
        s[out++] = merged;
        i += 2;
      } else {
        s[out++] = s[i++];
      }
    }
    length_[w] = out;
  }

 private:
  std::vector<std::uint32_t> symbols_;
  std::vector<std::size_t> start_;
  std::vector<std::uint32_t> length_;
  std::vector<std::uint64_t> counts_;
};

class Vocabulary {
 public:
  explicit Vocabulary(std::vector<std::string>& tokens) : tokens_(tokens) {}
  // The token's id, adding it when new.
  std::uint32_t add(const std::string& token) {
    const auto [it, added] = ids_.try_emplace(token, static_cast<std::uint32_t>(tokens_.size()));
    if (added) tokens_.push_back(token);
    return it->second;
  }

 private:
  std::vector<std::string>& tokens_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

// Pushes an entry for every pair with words listed in `changes` (sorted), after adding their
// count changes: HF's where_to_update drained into the queue (a pair only when its count is positive).
void apply_changes(const std::vector<Change>& changes, const Words& words, PairCounts& counts,
                   std::vector<QueueEntry>& queue) {
  for (std::size_t i = 0; i < changes.size();) {
    const Pair pair = changes[i].pair;
    std::int64_t& count = counts[pair];
    std::vector<std::uint32_t> where;
    for (; i < changes.size() && changes[i].pair == pair; ++i) {
      const Change& c = changes[i];
      count += c.delta * static_cast<std::int64_t>(words.count(c.word));
      if (c.delta > 0 && (where.empty() || where.back() != c.word)) where.push_back(c.word);
    }
    if (!where.empty() && count > 0) {
      queue.push_back({static_cast<std::uint64_t>(count), pair, std::move(where)});
      std::push_heap(queue.begin(), queue.end(), Before{});
    }
  }
}

}  // namespace

TrainedBpe train_bpe(const WordCounts& word_counts, const BpeTrainingOptions& options, const MergeProgress& progress) {
  TrainedBpe result;
  Vocabulary vocabulary(result.tokens);
  for (const std::string& special : options.special_tokens) result.special_ids.push_back(vocabulary.add(special));
  const std::size_t specials = result.tokens.size();
  // The byte alphabet in code point order of the byte symbols (UTF-8 order is code point order).
  std::array<std::uint8_t, 256> bytes;
  std::iota(bytes.begin(), bytes.end(), 0);
  std::sort(bytes.begin(), bytes.end(), [](std::uint8_t a, std::uint8_t b) { return byte_symbols()[a] < byte_symbols()[b]; });
  std::array<std::uint32_t, 256> byte_ids{};
  for (const std::uint8_t b : bytes) byte_ids[b] = vocabulary.add(byte_symbols()[b]);
  if (options.vocab_size < result.tokens.size()) {
    throw TokenizerError("the vocabulary size " + std::to_string(options.vocab_size) + " is smaller than the " +
                         std::to_string(result.tokens.size()) + " tokens every byte-level BPE starts with (" +
                         std::to_string(specials) + (specials == 1 ? " special token" : " special tokens") +
                         " and " + std::to_string(result.tokens.size() - specials) + " bytes)");
  }

  Words words(word_counts, byte_ids);
  PairCounts pair_counts;
  std::vector<QueueEntry> queue;
  {
    std::vector<Change> all;
    for (std::uint32_t w = 0; w < words.size(); ++w) {
      const std::uint32_t* s = words.begin(w);
      for (std::uint32_t i = 0; i + 1 < words.length(w); ++i) all.push_back({pair_of(s[i], s[i + 1]), w, +1});
    }
    std::sort(all.begin(), all.end());
    apply_changes(all, words, pair_counts, queue);
  }

  std::vector<TrainedBpe::Merge> merges;
  std::vector<Change> changes;
  while (result.tokens.size() < options.vocab_size && !queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), Before{});
    QueueEntry top = std::move(queue.back());
    queue.pop_back();
    const auto live = static_cast<std::uint64_t>(pair_counts.get(top.pair));
    if (top.count != live) {
      top.count = live;
      queue.push_back(std::move(top));
      std::push_heap(queue.begin(), queue.end(), Before{});
      continue;
    }
    if (top.count < 1 || options.min_frequency > top.count) break;
    const std::uint32_t merged = vocabulary.add(result.tokens[left_of(top.pair)] + result.tokens[right_of(top.pair)]);
    merges.push_back({left_of(top.pair), right_of(top.pair), merged});
    changes.clear();
    for (const std::uint32_t w : top.words) words.merge(w, top.pair, merged, changes);
    std::sort(changes.begin(), changes.end());
    apply_changes(changes, words, pair_counts, queue);
    if (progress) progress(merges.size(), result.tokens.size());
  }

  // HF keeps a pair merged twice at its later rank (its merges are a map from pair to rank).
  std::unordered_set<Pair> seen;
  for (auto it = merges.rbegin(); it != merges.rend(); ++it) {
    if (seen.insert(pair_of(it->left, it->right)).second) result.merges.push_back(*it);
  }
  std::reverse(result.merges.begin(), result.merges.end());
  return result;
}

void save_trained_bpe(const TrainedBpe& bpe, const std::filesystem::path& dir) {
  if (bpe.special_ids.empty()) throw TokenizerError("a trained tokenizer needs a special token to end documents with");
  std::vector<MergeRule> merges;
  merges.reserve(bpe.merges.size());
  for (const TrainedBpe::Merge& m : bpe.merges) merges.push_back({m.left, m.right, m.merged});
  std::vector<SpecialToken> specials;
  for (const std::uint32_t id : bpe.special_ids) {
    if (std::none_of(specials.begin(), specials.end(), [&](const SpecialToken& t) { return t.id == id; })) {
      specials.push_back({bpe.tokens[id], id});
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw TokenizerError("cannot create " + dir.string() + ": " + ec.message());
  write_text(dir / "vocab.json", vocab_json_text(bpe.tokens));
  write_text(dir / "merges.txt", merges_txt_text(bpe.tokens, merges));
  write_text(dir / "tokenizer.json", tokenizer_json_text(bpe.tokens, merges, specials));
  for (const auto& [name, text] : tokenizer_config_files(specials)) write_text(dir / name, text);
}

}  // namespace llmrdzv::tokenizer
