// What a ZeRO-3 rank (--shard_parameters) holds in host memory, planned before the model exists:
// per parameter of the model, over N ranks, its shard in the training type, an fp32 gradient
// shard, AdamW's two fp32 moments and, for bf16/fp16, an fp32 master copy (16/N bytes in fp32,
// 18/N in bf16 or fp16); plus the units in flight: unit 0 (embeddings, final norm, head) and two
// blocks gathered (one computing, the next prefetched), the fp32 buffers gradients land in:
// unit 0's (the head's come first in backward and wait for the embeddings') and two blocks' (one
// filling, one being reduced), and
// unit 0's gradients as autograd makes them (a tied head's waits for the embeddings').
// Ranks on one node share its memory, and a cgroup (a
// Slurm job's --mem) may allow less than the node has. Activations come on top and are not
// counted. A run that cannot fit is refused before any parameter is made, saying how much it
// needs: the alternative is the OOM killer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "llmrdzv/train/precision.hpp"

namespace llmrdzv::train {

struct ShardedModelSize {
  double parameters = 0;     // the whole model's
  double outer_unit = 0;     // unit 0's (embeddings, final norm, untied head)
  double largest_block = 0;  // the largest block's
};

struct ShardedHostNeed {
  ShardedModelSize size;
  ComputeDtype dtype = ComputeDtype::fp32;
  int world_size = 1, node_ranks = 1;
  double bytes_per_parameter = 0;  // on one rank, times N: 16 (fp32) or 18 (bf16, fp16)
  double state_bytes = 0;          // one rank's shards, gradient shards and AdamW state
  double in_flight_bytes = 0;      // one rank's units in flight
  double node_bytes = 0;           // (state + in flight) x the ranks on this node
};

ShardedHostNeed sharded_host_need(const ShardedModelSize& size, ComputeDtype dtype, int world_size, int node_ranks);

// "--shard_parameters: this model's ... need X GiB of host memory on this node ..." when
// node_bytes exceeds `available_bytes`; nullopt when it fits.
std::optional<std::string> sharded_host_shortfall(const ShardedHostNeed& need, double available_bytes);

// For the run log: each rank's share and the node's, against what is available.
std::string describe_sharded_host_need(const ShardedHostNeed& need, double available_bytes);

// The ranks on this node, as the launcher (srun --llm-rdzv, --nproc) says in LOCAL_WORLD_SIZE; 1
// without it.
int ranks_on_this_node();

// What this process's memory cgroup and its ancestors still allow, in bytes: the tightest of
// their limits less their use, reclaimable inactive file pages not counted as used. Reads cgroup
// v2 (memory.max, memory.current, memory.stat's inactive_file) or v1's memory controller
// (memory.limit_in_bytes, memory.usage_in_bytes, total_inactive_file) under `root`, for the
// cgroups /proc/self/cgroup's text names. nullopt when none sets a limit.
std::optional<double> cgroup_memory_headroom(const std::filesystem::path& root, std::string_view proc_self_cgroup);

// The host memory this process may still use: /proc/meminfo's MemAvailable, capped by
// cgroup_memory_headroom of /sys/fs/cgroup; nullopt when /proc does not say.
std::optional<double> available_host_memory();

}  // namespace llmrdzv::train
