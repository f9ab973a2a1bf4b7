// The BPE merge table and merge loop (see bpe_merges.hpp). Symbols live in a doubly linked list
// over the piece; candidate merges sit in a min-heap keyed by (rank, position) and are checked
// for staleness when popped, as in HF's tokenizers.
#include "bpe_merges.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <queue>

namespace llmrdzv::tokenizer {
namespace {

std::uint64_t pair_key(std::uint32_t left, std::uint32_t right) {
  return ((static_cast<std::uint64_t>(left) << 32) | right) + 1;
}

std::uint64_t mix(std::uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

struct Candidate {
  std::uint32_t rank;
  std::uint32_t pos;  // index of the left symbol in the piece
  std::uint32_t left;
  std::uint32_t right;
  bool operator>(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

}  // namespace

BpeMerges::BpeMerges(std::span<const Merge> merges) {
  const std::uint64_t capacity = std::bit_ceil(std::max<std::uint64_t>(16, merges.size() * 2));
  slots_.assign(capacity, Slot{0, 0, 0});
  mask_ = capacity - 1;
  for (std::uint32_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    const std::uint64_t key = pair_key(m.left, m.right);
    std::uint64_t i = mix(key) & mask_;
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
    slots_[i] = Slot{key, rank, m.merged};
  }
}

const BpeMerges::Slot* BpeMerges::find(std::uint32_t left, std::uint32_t right) const {
  const std::uint64_t key = pair_key(left, right);
  for (std::uint64_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].key == key) return &slots_[i];
    if (slots_[i].key == 0) return nullptr;
  }
}

void BpeMerges::apply(std::vector<std::uint32_t>& ids) const {
  const auto n = static_cast<std::uint32_t>(ids.size());
  if (n < 2) return;
  constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<std::uint32_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto offer = [&](std::uint32_t pos) {
    const std::uint32_t right = next[pos];
    if (right == kNone) return;
    if (const Slot* slot = find(ids[pos], ids[right])) heap.push({slot->rank, pos, ids[pos], ids[right]});
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : kNone;
    prev[i] = i > 0 ? i - 1 : kNone;
  }
  for (std::uint32_t i = 0; i + 1 < n; ++i) offer(i);

  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    const std::uint32_t right = alive[top.pos] ? next[top.pos] : kNone;
    if (right == kNone || ids[top.pos] != top.left || ids[right] != top.right) continue;  // stale
    ids[top.pos] = find(top.left, top.right)->merged;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] != kNone) prev[next[right]] = top.pos;
    if (prev[top.pos] != kNone) offer(prev[top.pos]);
    offer(top.pos);
  }
  std::uint32_t out = 0;
  for (std::uint32_t i = 0; i != kNone; i = next[i]) ids[out++] = ids[i];
  ids.resize(out);
}

}  // namespace llmrdzv::tokenizer
