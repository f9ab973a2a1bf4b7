// --streaming: global steps cut from the token stream as it is produced (see streaming.hpp).
#include "llmrdzv/data/streaming.hpp"

#include "state_text.hpp"

namespace llmrdzv::data {
namespace {
constexpr std::string_view kStateFormat = "llmrdzv-stream v1";
}  // namespace

StreamingBlocks::StreamingBlocks(SourceList sources, DocumentSelection selection, tokenizer::Tokenizer tokenizer,
                                 std::uint64_t block_size, BatchShape shape, std::uint64_t rank)
    : sources_(std::move(sources)),
      selection_(selection),
      tokenizer_(std::move(tokenizer)),
      block_size_(block_size),
      shape_(shape),
      rank_(rank) {
  if (block_size == 0) throw DataError("block_size must be at least 1");
  if (shape.per_device_batch == 0 || shape.world == 0 || shape.accumulation == 0) {
    throw DataError("batch shape must have no zero");
  }
  if (rank >= shape.world) {
    throw DataError("rank " + std::to_string(rank) + " is outside a world of " + std::to_string(shape.world));
  }
  restart_epoch();
}

void StreamingBlocks::restart_epoch() {
  stream_ = std::make_unique<DocumentTokenStream>(sources_, selection_, tokenizer_);
  pending_.clear();
  pending_begin_ = 0;
}

bool StreamingBlocks::fill(std::uint64_t count) {
  while (pending_.size() - pending_begin_ < count) {
    if (pending_begin_ > 0) {  // drop consumed ids before growing
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pending_begin_));
      pending_begin_ = 0;
    }
    if (!stream_->next(pending_)) return false;
  }
  return true;
}

bool StreamingBlocks::next_step(std::vector<std::vector<std::int64_t>>& micro_batches) {
  const std::uint64_t step_ids = shape_.global() * block_size_;
  if (!fill(step_ids)) {
    position_ = {position_.epoch + 1, 0};
    restart_epoch();
    return false;
  }
  const std::uint64_t micro_ids = shape_.per_device_batch * block_size_;
  const auto* mine = pending_.data() + pending_begin_ + rank_ * shape_.accumulation * micro_ids;
  micro_batches.assign(shape_.accumulation, {});
  for (std::uint64_t m = 0; m < shape_.accumulation; ++m) {
    micro_batches[m].assign(mine + m * micro_ids, mine + (m + 1) * micro_ids);
  }
  pending_begin_ += step_ids;
  ++position_.step;
  return true;
}

std::string StreamingBlocks::state() const {
  return std::string(kStateFormat) + " block_size=" + std::to_string(block_size_) +
         " global_batch=" + std::to_string(shape_.global()) + " epoch=" + std::to_string(position_.epoch) +
         " step=" + std::to_string(position_.step);
}

void StreamingBlocks::restore(std::string_view state) {
  const auto v = parse_state_text(state, kStateFormat, {"block_size", "global_batch", "epoch", "step"}, "stream");
  if (v.at("block_size") != block_size_ || v.at("global_batch") != shape_.global()) {
    throw DataError("the checkpoint's stream has block_size=" + std::to_string(v.at("block_size")) +
                    " global_batch=" + std::to_string(v.at("global_batch")) + " but this run has block_size=" +
                    std::to_string(block_size_) + " global_batch=" + std::to_string(shape_.global()));
  }
  restart_epoch();
  position_ = {v.at("epoch"), 0};
  const std::uint64_t step_ids = shape_.global() * block_size_;
  for (std::uint64_t s = 0; s < v.at("step"); ++s) {
    if (!fill(step_ids)) {
      throw DataError("stream state '" + std::string(state) + "' is past the end of the corpus's " +
                      std::to_string(s) + " global steps");
    }
    pending_begin_ += step_ids;
    ++position_.step;
  }
}

}  // namespace llmrdzv::data
