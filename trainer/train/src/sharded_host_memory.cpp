// ZeRO-3's host memory plan: the sums of sharded_host_memory.hpp and their wording.
#include "llmrdzv/train/sharded_host_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace llmrdzv::train {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double type_bytes(ComputeDtype dtype) { return dtype == ComputeDtype::fp32 ? 4 : 2; }

// "8.94 GiB", or "9.9 MiB" below a GiB.
std::string size_text(double bytes) {
  char text[32];
  if (bytes >= kGiB) std::snprintf(text, sizeof text, "%.2f GiB", bytes / kGiB);
  else std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

}  // namespace

ShardedHostNeed sharded_host_need(const ShardedModelSize& size, ComputeDtype dtype, int world_size, int node_ranks) {
  const double type = type_bytes(dtype);
  const double masters = dtype == ComputeDtype::fp32 ? 0 : 4;
  ShardedHostNeed need;
  need.bytes_per_parameter = type + 4 + 8 + masters;  // shard, fp32 gradient shard, moments, masters
  need.state_bytes = need.bytes_per_parameter * size.parameters / std::max(1, world_size);
  const double gathered = (size.outer_unit + 2 * size.largest_block) * type;
  const double reducing = std::max(size.outer_unit, size.largest_block) * (type + 4);
  need.in_flight_bytes = gathered + reducing;
  need.node_bytes = (need.state_bytes + need.in_flight_bytes) * std::max(1, node_ranks);
  return need;
}

std::optional<std::string> sharded_host_shortfall(const ShardedHostNeed& need, const ShardedModelSize& size,
                                                  ComputeDtype dtype, int world_size, int node_ranks,
                                                  double available_bytes) {
  if (need.node_bytes <= available_bytes) return std::nullopt;
  char text[640];
  std::snprintf(text, sizeof text,
                "--shard_parameters: this model's %.3g billion parameters need %.1f GiB of host memory on this node "
                "(%d rank%s x %.1f GiB: %g bytes per parameter over %d ranks for the %s shards, their fp32 "
                "gradients and AdamW state, plus %.1f GiB of units in flight), and it has %.1f GiB available: "
                "run on more nodes or fewer ranks per node, or use a smaller model",
                size.parameters / 1e9, need.node_bytes / kGiB, node_ranks, node_ranks == 1 ? "" : "s",
                (need.state_bytes + need.in_flight_bytes) / kGiB, need.bytes_per_parameter, world_size,
                dtype_name(dtype), need.in_flight_bytes / kGiB, available_bytes / kGiB);
  return std::string(text);
}

std::string describe_sharded_host_need(const ShardedHostNeed& need, ComputeDtype dtype, int world_size, int node_ranks,
                                       double available_bytes) {
  char text[512];
  std::snprintf(text, sizeof text,
                "--shard_parameters: each rank holds about %s of host memory before activations (%g bytes per "
                "parameter over %d ranks for the %s shards, their fp32 gradients and AdamW state, plus %s of "
                "units in flight); this node's %d rank%s %s of %.1f GiB available",
                size_text(need.state_bytes + need.in_flight_bytes).c_str(), need.bytes_per_parameter, world_size,
                dtype_name(dtype), size_text(need.in_flight_bytes).c_str(), node_ranks, node_ranks == 1 ? "" : "s",
                size_text(need.node_bytes).c_str(), available_bytes / kGiB);
  return text;
}

std::optional<double> available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024.0;
  }
  return std::nullopt;
}

}  // namespace llmrdzv::train
