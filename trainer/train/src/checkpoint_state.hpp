// What a training checkpoint holds and how the loop's state goes in and out of it: the model (HF
// layout, so a checkpoint's model.safetensors + config.json, and its tokenizer files, load in
// transformers and in `trainer generate`), this rank's
// optimizer state from the engine, the data position, the RNG states and the step. Files go
// through llmrdzv::io's checkpoint writer (atomic, manifest with checksums, keep-last-K).
// Rank 0 writes <output_dir>/checkpoint-N; rank r > 0 writes <output_dir>/rank-r/checkpoint-N
// (its optimizer shard, data position and RNG; no model). A checkpoint written by W ranks can be
// resumed by any number of ranks (an elastic restart after a rank failed): the optimizer state is
// rank 0's replica, or the --offload optimizer shards of all W ranks resharded; the data position
// is global; the loss sum is the ranks' mean.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/io/checkpoint.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::train {

struct LoopState {
  std::int64_t global_step = 0;
  std::string data_state;       // TrainBatches::state()
  double train_loss_sum = 0;    // sum over steps of this rank's step loss (for the final train_loss)
  double loss_scale = 0;        // fp16's LossScaler: its scale (0 = none yet), good steps in a row
  std::int64_t loss_scale_good_steps = 0;  // and overflows left before it halves (0 = the settings' hysteresis)
  std::int64_t loss_scale_hysteresis = 0;
  std::int64_t skipped_steps = 0;  // fp16 steps skipped for overflow: the LR schedule lags by them, as in transformers
  std::string logging_dir{};    // rank 0's TensorBoard directory, which a resumed run continues
  // --metric_for_best_model's best value so far and the step it was evaluated at (0 = none yet),
  // as transformers' TrainerState keeps best_metric and best_global_step.
  std::optional<double> best_metric{};
  std::int64_t best_step = 0;
};

// Where `rank` keeps its checkpoints.
std::filesystem::path checkpoint_root(const std::filesystem::path& output_dir, int rank);

// With parameters sharded (ZeRO-3): what a save calls before it reads a parameter, gathering the
// parameter's unit (engine::ParameterUnits::read_unit_of); empty when every rank holds the model.
io::ParameterReadHook unit_reader(engine::TrainingEngine& engine);

// Writes this rank's checkpoint for state.global_step. It removes nothing: older checkpoints go
// (prune_training_checkpoints) only once every rank has finished this one, so a rank that dies
// mid-save always leaves a complete checkpoint behind. Rank 0 writes the model as it reads it,
// unit by unit where the parameters are sharded (every rank then gathers each unit with it).
std::filesystem::path save_training_checkpoint(const std::filesystem::path& output_dir, model::CausalLm& model,
                                               engine::TrainingEngine& engine, const LoopState& state,
                                               const tokenizer::Tokenizer* tokenizer = nullptr);

// Keeps this rank's newest keep_last checkpoints (0 = all), the one of `saved_step` and, when
// above 0, the best one of `best_step` always (see io::prune_checkpoints); call after all ranks saved.
void prune_training_checkpoints(const std::filesystem::path& output_dir, int rank, std::int64_t keep_last,
                                std::int64_t saved_step, std::int64_t best_step = 0);

// The newest checkpoint-N in output_dir that every rank which wrote it finished: rank 0's
// checkpoint-N verifies (with `verify`; else its manifest exists) and rank-1..W-1/checkpoint-N
// exist for the W ranks its trainer state names (their saves are atomic). Why newer ones were
// skipped goes to `rejected`. nullopt when there is none.
std::optional<std::filesystem::path> latest_complete_checkpoint(const std::filesystem::path& output_dir, bool verify,
                                                                std::vector<std::string>* rejected = nullptr);

// The checkpoint directory a --resume_from_checkpoint value names for `rank`: "latest" is
// latest_complete_checkpoint(output_dir) (newer broken ones are reported on stderr), else a
// checkpoint-N path. Rank r > 0 gets rank-r/checkpoint-N next to rank 0's when it exists (same
// world size), else rank 0's checkpoint-N (restore_state reshards). Throws io::CheckpointError
// when there is none.
std::filesystem::path resolve_checkpoint(const std::string& value, const std::filesystem::path& output_dir, int rank);

// A checkpoint whose manifest and checksums verified, its files mapped.
struct VerifiedCheckpoint {
  std::filesystem::path dir;
  io::CheckpointData data;
};

// Throws io::CheckpointError naming the checkpoint and the problem (partial or corrupt files).
VerifiedCheckpoint open_training_checkpoint(const std::filesystem::path& dir);

// The checkpoint's model weights, checked against `model` (whose parameters need shapes, not
// values): a model built without values (ZeRO-3) reads them unit by unit. Throws
// io::CheckpointError when the checkpoint holds no model or one of another configuration.
io::HfWeights checkpoint_weights(const VerifiedCheckpoint& checkpoint, const model::CausalLm& model);

// Rank 0, before engine.attach (which makes the other ranks' weights equal to rank 0's): the
// model weights, as checkpoint_weights reads them.
void restore_model(const VerifiedCheckpoint& checkpoint, model::CausalLm& model);

// Every rank, after engine.attach: optimizer state, RNG states and the loop state. A checkpoint of
// another number of ranks (or of another rank) is resumed from all its ranks' files (see above).
// Throws io::CheckpointError on a missing or inconsistent part.
LoopState restore_state(const VerifiedCheckpoint& checkpoint, engine::TrainingEngine& engine);

}  // namespace llmrdzv::train
