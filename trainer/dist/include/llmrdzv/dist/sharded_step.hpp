// The optimizer side of --shard_parameters (ZeRO-3): what the distributed engine does with the
// shards ShardedUnits keeps. The one-process engine's AdamW updates this rank's shards only (on
// fp32 masters where the parameters are bf16/fp16), clipping uses the norm of the global gradient
// (every rank's squared shard summed), and the optimizer state saved per rank is the shard's,
// with the world size it was sharded over (another world size reshards it).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/dist/sharded_units.hpp"
#include "llmrdzv/engine/engine_options.hpp"
#include "llmrdzv/engine/master_weights.hpp"
#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::dist {

class ShardedStep {
 public:
  // `parameters` already equal on every rank (the engine broadcast rank 0's), or without values
  // and `deferred` to fill them; `before_failing`, `deferred`: ShardedUnits'.
  ShardedStep(const std::vector<engine::NamedParameter>& parameters, const engine::AdamWSettings& settings,
              const engine::EngineOptions& options, c10::intrusive_ptr<c10d::Backend> backend,
              std::function<void()> before_failing, const engine::DeferredValues* deferred = nullptr);

  ShardedUnits& units() { return *units_; }

  void begin_micro_step();
  engine::GradientNorm finish_gradients(double max_norm, double gradient_multiplier);
  void optimizer_step(double learning_rate);
  void skip_step();

  engine::TensorMap optimizer_state() const;
  // Throws std::runtime_error naming the problem. A state sharded over another world size is
  // resharded when it holds every old rank's entries (shard_resharding.hpp), refused otherwise.
  void load_optimizer_state(const engine::TensorMap& saved);

  // "rank R: --shard_parameters: ..." with the bytes held (ShardResidency and the optimizer
  // state's storages), for the run log.
  std::string residency_report(int rank) const;
  double wait_seconds() const;

 private:
  // AdamW's moments and the fp32 masters of bf16/fp16 shards, read from their storages.
  std::int64_t optimizer_state_bytes() const;

  c10::intrusive_ptr<c10d::Backend> backend_;
  std::unique_ptr<ShardedUnits> units_;
  std::optional<engine::MasterWeights> masters_;
  std::unique_ptr<engine::TrainingEngine> optimizer_;
  double norm_wait_seconds_ = 0;
};

}  // namespace llmrdzv::dist
