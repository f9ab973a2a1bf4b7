// BPE merges in token-id space: (left id, right id) -> (rank, merged id) in an open-addressing
// table, and the merge loop HF's BPE model runs on one piece: repeatedly merge the adjacent pair
// of lowest rank, the leftmost one on ties, until no pair has a merge.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace llmrdzv::tokenizer {

class BpeMerges {
 public:
  struct Merge {
    std::uint32_t left;
    std::uint32_t right;
    std::uint32_t merged;
  };
  // Merges in rank order; callers guarantee each (left, right) appears once.
  explicit BpeMerges(std::span<const Merge> merges);

  // Replaces ids (one piece's initial symbols) by its merged tokens.
  void apply(std::vector<std::uint32_t>& ids) const;

 private:
  struct Slot {
    std::uint64_t key;  // 0 = empty; else (left << 32 | right) + 1
    std::uint32_t rank;
    std::uint32_t merged;
  };
  const Slot* find(std::uint32_t left, std::uint32_t right) const;

  std::vector<Slot> slots_;
  std::uint64_t mask_ = 0;
};

}  // namespace llmrdzv::tokenizer
