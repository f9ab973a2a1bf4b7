// The loop's view of the corpus: this rank's micro-batches step by step as [batch, block] int64
// tensors, from the token cache with the shuffled sampler or from --streaming, with a position
// that checkpoints save and restore; and the validation blocks for evaluation.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/data/sampler.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

class TrainBatches {
 public:
  virtual ~TrainBatches() = default;
  // This rank's `accumulation` micro-batches of the next global step.
  virtual std::vector<at::Tensor> next_step() = 0;
  // Global steps per epoch; nullopt when streaming (the stream's length is unknown up front).
  virtual std::optional<std::uint64_t> steps_per_epoch() const = 0;
  virtual data::SamplerPosition position() const = 0;
  virtual std::string state() const = 0;
  virtual void restore(std::string_view state) = 0;
};

// Validation blocks, for evaluation.
class EvalBlocks {
 public:
  virtual ~EvalBlocks() = default;
  virtual std::uint64_t count() const = 0;
  // Blocks [first, first + n) as an [n, block] int64 tensor.
  virtual at::Tensor read(std::uint64_t first, std::uint64_t n) const = 0;
};

struct DataPlan {
  std::uint64_t block_size = 0;
  data::BatchShape shape;
  std::uint64_t rank = 0;
};

// Token cache under options.token_cache_dir (default <output_dir>/token-cache) or the stream. Every
// message names the file or option at fault (data::DataError, tokenizer::TokenizerError).
std::unique_ptr<TrainBatches> open_train_batches(const TrainOptions& options, const tokenizer::Tokenizer& tokenizer,
                                                 const DataPlan& plan);
// The validation file, or the held-out percentage of the training text; nullptr when neither.
// Rank 0 (plan.rank 0 above, `report` here) names the binary files a folder listing skipped.
std::unique_ptr<EvalBlocks> open_eval_blocks(const TrainOptions& options, const tokenizer::Tokenizer& tokenizer,
                                             std::uint64_t block_size, bool report);

}  // namespace llmrdzv::train
