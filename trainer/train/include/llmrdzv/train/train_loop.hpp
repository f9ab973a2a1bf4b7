// `trainer train`: the whole run — data, model, optimizer through the TrainingEngine, the step
// loop with accumulation, clipping, schedule, logging, evaluation and checkpoints, resume, and the
// final HF export and summary.
#pragma once

#include <optional>

#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

struct TrainSummary {
  std::int64_t global_step = 0;
  double train_runtime = 0;  // seconds of this process's training loop
  double train_comm_wait_seconds = 0;  // of those, blocked in collectives (TrainingEngine::comm_wait_seconds)
  double train_samples_per_second = 0;
  std::optional<double> train_loss;  // mean step loss over the whole run (resumed steps included)
  std::optional<double> eval_loss;
  std::optional<double> perplexity;
  std::optional<double> eval_bits_per_byte;  // the eval loss in bits per byte of the predicted text
};

// Runs what the options ask for (validated by the CLI). Rank 0 prints progress to stdout and
// writes metrics.jsonl, all_results.json and the final model to output_dir. Throws on bad input
// (corpus, model, checkpoint) with a message naming it.
TrainSummary run_training(const TrainOptions& options, engine::TrainingEngine& engine);

}  // namespace llmrdzv::train
