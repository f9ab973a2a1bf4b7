// Resuming --shard_parameters (ZeRO-3) at another world size, as elastic restarts do: the optimizer
// state every old rank saved for its shards (AdamW's moments and step, the fp32 masters of a
// bf16/fp16 run) is cut again for the new ranks. Within a unit the shards are consecutive pieces of
// one flat vector, so each part's old pieces, concatenated in rank order, are the part whole; the
// new rank's piece is taken out of it. Pure tensor bookkeeping, so it is tested on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "llmrdzv/dist/sharded_units.hpp"
#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::dist {

// Entries: engine::kParameterShardKeys (the world size each rank's state was cut for; the count of
// old ranks beside their "shard.<k>/" entries).
inline constexpr const char* kShardParametersWorldEntry = engine::kParameterShardKeys.layout;
inline constexpr const char* kShardParametersOldWorldEntry = engine::kParameterShardKeys.count;

// The state rank `rank` of `world` keeps for the model whose units are `units`, out of `saved` (old
// ranks' entries as above), with kShardParametersWorldEntry set to `world`. Throws
// std::runtime_error naming the entry or unit that does not fit (another model, a missing rank's
// piece, step counts that disagree, an entry this layout does not know).
engine::TensorMap reshard_shard_state(const engine::TensorMap& saved, const std::vector<UnitLayout>& units, int rank,
                                      int world);

}  // namespace llmrdzv::dist
