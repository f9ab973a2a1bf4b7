// The model a run trains, made and handed to the engine: everything between the tokenizer and the
// first step. Every rank builds or loads the whole model, rank 0 restores a checkpoint's weights,
// the model moves to the device in the run's precision and the engine makes rank 0's values every
// rank's. With --shard_parameters (ZeRO-3) no rank ever holds the whole model: the host memory
// the shards need is planned first (and a node that cannot hold it refused), the model is built
// without values, and the engine fills it unit by unit (HF's initialisation, the model
// directory's weights, or on resume the checkpoint's), keeping only each rank's shards.
#pragma once

#include <string>
#include <vector>

#include "checkpoint_state.hpp"
#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/train/options.hpp"
#include "llmrdzv/train/precision.hpp"
#include "model_setup.hpp"

namespace llmrdzv::train {

struct TrainedModel {
  model::CausalLm model;
  std::vector<std::string> log;  // lines for the run log (the ZeRO-3 host memory plan)
};

// `config`: model_config_of(source, ...); `resume`: the checkpoint to continue from, or nullptr.
// Throws std::invalid_argument for a model the options or the machine cannot take, io errors for
// unreadable weights.
TrainedModel make_trained_model(const TrainOptions& options, const ModelSource& source,
                                const model::ModelConfig& config, const VerifiedCheckpoint* resume,
                                const Precision& precision, engine::TrainingEngine& engine);

}  // namespace llmrdzv::train
