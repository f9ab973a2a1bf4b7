// Which blocks each rank trains on, step by step, so that data parallelism changes nothing:
// a global step takes global_batch = per_device_batch x world x accumulation blocks from a
// permutation of all blocks fixed by (seed, epoch); rank r takes the r-th contiguous world-th of
// them and cuts it into `accumulation` micro-batches of per_device_batch. The union over ranks
// and micro-batches of one global step is exactly the global step a 1-rank run with the same
// global batch takes, so the averaged gradient is the same. A partial last global batch of an
// epoch is dropped. The position (epoch, step) is global, so a run can resume on another world
// size as long as the global batch is unchanged.
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
  std::uint64_t step = 0;  // global steps already taken in this epoch
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

  std::uint64_t steps_per_epoch() const { return steps_per_epoch_; }
  const BatchShape& shape() const { return shape_; }

  // All global_batch block indices of a global step, in order (rank r owns the r-th slice).
  std::vector<std::uint64_t> global_batch(SamplerPosition at);
  // This rank's micro-batch `micro` (0..accumulation-1) of a global step.
  std::vector<std::uint64_t> micro_batch(SamplerPosition at, std::uint64_t micro);

  // This rank's micro-batches of the step at position(), then advances to the next step (the
  // next epoch after the last step of one).
  std::vector<std::vector<std::uint64_t>> next_step();
  SamplerPosition position() const { return position_; }

  // "llmrdzv-sampler v1 seed=S blocks=N global_batch=G shuffle=B epoch=E step=T": for checkpoints.
  std::string state() const;
  // Seeks to a saved state; throws DataError when it is malformed or its seed, block count, global
  // batch or shuffle differ from this sampler's (a different corpus or batch shape).
  void restore(std::string_view state);

 private:
  const std::vector<std::uint64_t>& order(std::uint64_t epoch);

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
