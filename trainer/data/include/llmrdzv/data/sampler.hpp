// Which blocks each rank trains on, step by step, so that data parallelism changes nothing:
// a global step takes global_batch = per_device_batch x world x accumulation blocks from a
// permutation of all blocks fixed by (seed, epoch); rank r takes the r-th contiguous world-th of
// them and cuts it into `accumulation` micro-batches of per_device_batch. The union over ranks
// and micro-batches of one global step is exactly the global step a 1-rank run with the same
// global batch takes, so the averaged gradient is the same. An epoch ends when fewer than one
// global batch of its permutation is left (that rest is dropped). The position is global: the
// epoch and how many blocks of its permutation were consumed (the offset), so a run can resume on
// another world size or global batch from exactly where it stopped (an elastic restart after a
// rank failed): the next step takes the new global batch from that offset on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrdzv::data {

struct BatchShape {
  std::uint64_t per_device_batch = 1;
  std::uint64_t world = 1;
  std::uint64_t accumulation = 1;
  std::uint64_t global() const { return per_device_batch * world * accumulation; }
};

// Where the next global step starts: saved in checkpoints.
struct SamplerPosition {
  std::uint64_t epoch = 0;
  // Global steps already taken in this epoch. BlockSampler: offset / global_batch (whole global
  // batches of this run's shape consumed; informational after a resume with another batch).
  std::uint64_t step = 0;
  // BlockSampler: blocks of the epoch's permutation already consumed, the exact position (0 for
  // StreamingBlocks, which counts steps).
  std::uint64_t offset = 0;
  bool operator==(const SamplerPosition&) const = default;
};

// Deterministic permutation of [0, n) for (seed, epoch): Fisher-Yates driven by SplitMix64 with
// unbiased bounded draws, identical on every platform.
std::vector<std::uint64_t> shuffled_indices(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch);

class BlockSampler {
 public:
  // Throws DataError when the shape has a zero, rank >= world, or num_blocks < one global batch.
  BlockSampler(std::uint64_t num_blocks, std::uint64_t seed, BatchShape shape, std::uint64_t rank,
               bool shuffle = true);

  // Global steps of an epoch started at offset 0 (floor(num_blocks / global_batch)).
  std::uint64_t steps_per_epoch() const { return steps_per_epoch_; }
  const BatchShape& shape() const { return shape_; }

  // All global_batch block indices of the global step starting at `at` (its epoch and offset), in
  // order (rank r owns the r-th slice). Throws DataError when fewer than global_batch blocks of
  // the epoch are left at that offset.
  std::vector<std::uint64_t> global_batch(SamplerPosition at);
  // This rank's micro-batch `micro` (0..accumulation-1) of that global step.
  std::vector<std::uint64_t> micro_batch(SamplerPosition at, std::uint64_t micro);

  // This rank's micro-batches of the step at position(), then advances to the next step (the
  // next epoch after the last step of one).
  std::vector<std::vector<std::uint64_t>> next_step();
  SamplerPosition position() const { return position_; }

  // "llmrdzv-sampler v2 seed=S blocks=N shuffle=B epoch=E offset=O": for checkpoints.
  std::string state() const;
  // Seeks to a saved state: v2, or v1 ("... global_batch=G ... epoch=E step=T", offset T x G)
  // of older checkpoints. Any global batch resumes at the saved offset; when fewer than one of
  // this sampler's global batches is left there, at the start of the next epoch. Throws DataError
  // when the state is malformed or its seed, block count or shuffle differ from this sampler's
  // (another corpus, block size or seed).
  void restore(std::string_view state);

 private:
  const std::vector<std::uint64_t>& order(std::uint64_t epoch);
  // The position at `offset` of `epoch`, or the next epoch's start when no global batch fits.
  SamplerPosition at_offset(std::uint64_t epoch, std::uint64_t offset) const;

  std::uint64_t num_blocks_;
  std::uint64_t seed_;
  BatchShape shape_;
  std::uint64_t rank_;
  bool shuffle_;
  std::uint64_t steps_per_epoch_;
  SamplerPosition position_;
  std::uint64_t order_epoch_ = ~std::uint64_t{0};
  std::vector<std::uint64_t> order_;
};

// Evaluation: rank r of world takes blocks [begin, end), contiguous, all blocks covered once.
struct BlockRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
BlockRange eval_shard(std::uint64_t num_blocks, std::uint64_t rank, std::uint64_t world);

}  // namespace llmrdzv::data
