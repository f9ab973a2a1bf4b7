// Deterministic shuffling and the rank-sharded global-batch sampler (see sampler.hpp).
#include "llmrdzv/data/sampler.hpp"

#include <numeric>

#include "llmrdzv/data/corpus.hpp"
#include "state_text.hpp"

namespace llmrdzv::data {
namespace {

constexpr std::string_view kStateFormat = "llmrdzv-sampler v2";
constexpr std::string_view kStateFormatV1 = "llmrdzv-sampler v1";  // (epoch, step) of one global batch

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) by rejection: no modulo bias.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  std::uint64_t state_;
};

std::string shape_text(const BatchShape& s) {
  return std::to_string(s.per_device_batch) + " per device x " + std::to_string(s.world) + " ranks x " +
         std::to_string(s.accumulation) + " accumulation steps";
}

}  // namespace

std::vector<std::uint64_t> shuffled_indices(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  // One stream per (seed, epoch): the epoch is mixed in through a first draw of its own stream.
  SplitMix64 rng(seed ^ SplitMix64(epoch ^ 0x6C6C6D72647A7600ull).next());
  for (std::uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

BlockSampler::BlockSampler(std::uint64_t num_blocks, std::uint64_t seed, BatchShape shape, std::uint64_t rank,
                           bool shuffle)
    : num_blocks_(num_blocks), seed_(seed), shape_(shape), rank_(rank), shuffle_(shuffle) {
  if (shape.per_device_batch == 0 || shape.world == 0 || shape.accumulation == 0) {
    throw DataError("batch shape must have no zero: " + shape_text(shape));
  }
  if (rank >= shape.world) {
    throw DataError("rank " + std::to_string(rank) + " is outside a world of " + std::to_string(shape.world));
  }
  if (num_blocks < shape.global()) {
    throw DataError("the data holds " + std::to_string(num_blocks) + " blocks, fewer than one global batch of " +
                    std::to_string(shape.global()) + " (" + shape_text(shape) +
                    "): use more data, a smaller block_size or a smaller batch");
  }
  steps_per_epoch_ = num_blocks / shape.global();
}

const std::vector<std::uint64_t>& BlockSampler::order(std::uint64_t epoch) {
  if (order_epoch_ != epoch) {
    if (shuffle_) {
      order_ = shuffled_indices(num_blocks_, seed_, epoch);
    } else {
      order_.resize(num_blocks_);
      std::iota(order_.begin(), order_.end(), std::uint64_t{0});
    }
    order_epoch_ = epoch;
  }
  return order_;
}

SamplerPosition BlockSampler::at_offset(std::uint64_t epoch, std::uint64_t offset) const {
  if (offset + shape_.global() > num_blocks_) return {epoch + 1, 0, 0};
  return {epoch, offset / shape_.global(), offset};
}

std::vector<std::uint64_t> BlockSampler::global_batch(SamplerPosition at) {
  if (at.offset > num_blocks_ || num_blocks_ - at.offset < shape_.global()) {
    throw DataError("sampler offset " + std::to_string(at.offset) + " leaves fewer than one global batch of " +
                    std::to_string(shape_.global()) + " of the epoch's " + std::to_string(num_blocks_) + " blocks");
  }
  const auto& all = order(at.epoch);
  const auto first = all.begin() + static_cast<std::ptrdiff_t>(at.offset);
  return {first, first + static_cast<std::ptrdiff_t>(shape_.global())};
}

std::vector<std::uint64_t> BlockSampler::micro_batch(SamplerPosition at, std::uint64_t micro) {
  if (micro >= shape_.accumulation) {
    throw DataError("micro-batch " + std::to_string(micro) + " of " + std::to_string(shape_.accumulation));
  }
  const std::vector<std::uint64_t> global = global_batch(at);
  const std::uint64_t offset = (rank_ * shape_.accumulation + micro) * shape_.per_device_batch;
  const auto first = global.begin() + static_cast<std::ptrdiff_t>(offset);
  return {first, first + static_cast<std::ptrdiff_t>(shape_.per_device_batch)};
}

std::vector<std::vector<std::uint64_t>> BlockSampler::next_step() {
  std::vector<std::vector<std::uint64_t>> micro_batches;
  for (std::uint64_t m = 0; m < shape_.accumulation; ++m) micro_batches.push_back(micro_batch(position_, m));
  position_ = at_offset(position_.epoch, position_.offset + shape_.global());
  return micro_batches;
}

std::string BlockSampler::state() const {
  return std::string(kStateFormat) + " seed=" + std::to_string(seed_) + " blocks=" + std::to_string(num_blocks_) +
         " shuffle=" + (shuffle_ ? "1" : "0") + " epoch=" + std::to_string(position_.epoch) +
         " offset=" + std::to_string(position_.offset);
}

void BlockSampler::restore(std::string_view state) {
  // v1 (older checkpoints) counted global steps of its one global batch: offset = step x batch.
  const bool v1 = state.starts_with(std::string(kStateFormatV1) + " ") || state == kStateFormatV1;
  const auto v = v1 ? parse_state_text(state, kStateFormatV1,
                                       {"seed", "blocks", "global_batch", "shuffle", "epoch", "step"}, "sampler")
                    : parse_state_text(state, kStateFormat, {"seed", "blocks", "shuffle", "epoch", "offset"}, "sampler");
  const auto differs = [&](std::string_view key, std::uint64_t saved, std::uint64_t now) {
    if (saved != now) {
      throw DataError("the checkpoint's sampler has " + std::string(key) + "=" + std::to_string(saved) +
                      " but this run has " + std::to_string(now) +
                      " (a different corpus, block size, seed or shuffle cannot resume it)");
    }
  };
  differs("seed", v.at("seed"), seed_);
  differs("blocks", v.at("blocks"), num_blocks_);
  differs("shuffle", v.at("shuffle"), shuffle_ ? 1 : 0);
  std::uint64_t offset = 0;
  if (v1) {
    const std::uint64_t saved_batch = v.at("global_batch");
    if (saved_batch == 0 || v.at("step") >= num_blocks_ / saved_batch) {
      throw DataError("sampler state '" + std::string(state) + "' is malformed: step is past the epoch's " +
                      std::to_string(saved_batch == 0 ? 0 : num_blocks_ / saved_batch) + " steps");
    }
    offset = v.at("step") * saved_batch;
  } else {
    offset = v.at("offset");
    if (offset >= num_blocks_) {
      throw DataError("sampler state '" + std::string(state) + "' is malformed: offset is past the epoch's " +
                      std::to_string(num_blocks_) + " blocks");
    }
  }
  position_ = at_offset(v.at("epoch"), offset);
}

BlockRange eval_shard(std::uint64_t num_blocks, std::uint64_t rank, std::uint64_t world) {
  if (world == 0 || rank >= world) {
    throw DataError("rank " + std::to_string(rank) + " is outside a world of " + std::to_string(world));
  }
  return {num_blocks * rank / world, num_blocks * (rank + 1) / world};
}

}  // namespace llmrdzv::data
