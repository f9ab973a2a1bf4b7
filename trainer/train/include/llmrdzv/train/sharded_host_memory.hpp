// What a ZeRO-3 rank (--shard_parameters) holds in host memory, planned before the model exists:
// per parameter of the model, over N ranks, its shard in the training type, an fp32 gradient
// shard, AdamW's two fp32 moments and, for bf16/fp16, an fp32 master copy (16/N bytes in fp32,
// 18/N in bf16 or fp16); plus the units in flight: unit 0 (embeddings, final norm, head) and two
// blocks gathered (one computing, the next prefetched) and one unit's gradients being reduced
// (autograd's in the training type and their fp32 flat copy). Ranks on one node share its memory.
// Activations come on top and are not counted. A run whose node cannot hold this is refused before
// any parameter is made, saying how much it needs: the alternative is the kernel's OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llmrdzv/train/precision.hpp"

namespace llmrdzv::train {

struct ShardedModelSize {
  double parameters = 0;     // the whole model's
  double outer_unit = 0;     // unit 0's (embeddings, final norm, untied head)
  double largest_block = 0;  // the largest block's
};

struct ShardedHostNeed {
  double bytes_per_parameter = 0;  // on one rank, times N: 16 (fp32) or 18 (bf16, fp16)
  double state_bytes = 0;          // one rank's shards, gradient shards and AdamW state
  double in_flight_bytes = 0;      // one rank's units in flight
  double node_bytes = 0;           // (state + in flight) x the ranks on this node
};

ShardedHostNeed sharded_host_need(const ShardedModelSize& size, ComputeDtype dtype, int world_size, int node_ranks);

// "... needs X GiB of host memory on this node ..." when node_bytes exceeds `available_bytes`;
// nullopt when it fits.
std::optional<std::string> sharded_host_shortfall(const ShardedHostNeed& need, const ShardedModelSize& size,
                                                  ComputeDtype dtype, int world_size, int node_ranks,
                                                  double available_bytes);

// For the run log: each rank's share and the node's, against what is available.
std::string describe_sharded_host_need(const ShardedHostNeed& need, ComputeDtype dtype, int world_size, int node_ranks,
                                       double available_bytes);

// MemAvailable of /proc/meminfo in bytes; nullopt when it cannot be read.
std::optional<double> available_host_memory();

}  // namespace llmrdzv::train
