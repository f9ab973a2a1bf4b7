// What the training engines (make_single_process_engine, dist::make_distributed_engine) read
// from the command line, and nothing else: so they depend on this struct, not on trainer/train's
// TrainOptions, which fills it (train::engine_options) and takes its defaults from here. The rest
// reaches the engines through the TrainingEngine calls: AdamW's hyperparameters in attach(), the
// learning rate in optimizer_step(), clipping and the loss scale in finish_gradients(), the
// precision as the parameters' dtype. Torch-free: TrainOptions embeds these enums.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "llmrdzv/engine/option_names.hpp"

namespace llmrdzv::engine {

// Where optimizer state lives: with the parameters, or sharded on the CPU (ZeRO-Offload style).
enum class Offload { none, optimizer };
// With Offload::optimizer, how a rank gets its shard's gradient (see EngineOptions).
enum class OffloadGradientSync { automatic, reduce, all_reduce };

// Each enum's names, indexed by its values (option_names.hpp).
inline constexpr std::array<std::string_view, 2> kOffloadNames{"none", "optimizer"};
inline constexpr std::array<std::string_view, 3> kOffloadGradientSyncNames{"auto", "reduce", "all_reduce"};
constexpr std::span<const std::string_view> option_names(Offload) { return kOffloadNames; }
constexpr std::span<const std::string_view> option_names(OffloadGradientSync) { return kOffloadGradientSyncNames; }

struct EngineOptions {
  bool use_cpu = false;  // stay on the CPU even when CUDA is available
  // --threads, which the training loop applies; at 0 (and without OMP_NUM_THREADS) the distributed
  // engine gives each rank its share of the node's cores.
  std::int64_t threads = 0;
  Offload offload = Offload::none;
  std::int64_t offload_chunk_mb = 64;  // --offload optimizer: host<->device pipeline chunk, MiB
  // --offload optimizer: after this many optimizer steps, ZeRO-Offload's one-step delayed
  // parameter update (the host's AdamW overlaps the next step's forward and backward, which run
  // on weights one update behind); 0 = never.
  std::int64_t offload_delayed_update = 0;
  // --offload optimizer: how each rank gets its shard's gradient: reduce (each shard's part of a
  // bucket reduced to its owner, ZeRO's reduce-scatter), all_reduce (then sliced), auto (reduce
  // on GPUs, all_reduce on the CPU).
  OffloadGradientSync offload_gradient_sync = OffloadGradientSync::automatic;
  std::int64_t ddp_bucket_cap_mb = 25;  // gradient all-reduce bucket size, MiB
  // --shard_parameters (ZeRO-3): each rank keeps 1/N of every parameter unit, its gradient and its
  // optimizer state, gathering a unit's parameters only while it computes.
  bool shard_parameters = false;
};

}  // namespace llmrdzv::engine
