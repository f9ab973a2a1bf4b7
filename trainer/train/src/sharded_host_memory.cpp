// ZeRO-3's host memory plan: the sums of sharded_host_memory.hpp, their wording, and what the
// kernel says is available (MemAvailable, the memory cgroups).
#include "llmrdzv/train/sharded_host_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace llmrdzv::train {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "8.94 GiB", or "9.9 MiB" below a GiB.
std::string size_text(double bytes) {
  char text[32];
  if (bytes >= kGiB) std::snprintf(text, sizeof text, "%.2f GiB", bytes / kGiB);
  else std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

const char* plural(int n) { return n == 1 ? "" : "s"; }

// The first number in `file`, or the value of `key` in a "key value" file; nullopt when absent
// or not a number ("max").
std::optional<double> read_number(const std::filesystem::path& file, std::string_view key = {}) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first)) continue;
    if (key.empty()) {
      char* end = nullptr;
      const double value = std::strtod(first.c_str(), &end);
      return end != first.c_str() && *end == '\0' ? std::optional<double>(value) : std::nullopt;
    }
    double value = 0;
    if (first == key && fields >> value) return value;
  }
  return std::nullopt;
}

}  // namespace

ShardedHostNeed sharded_host_need(const ShardedModelSize& size, ComputeDtype dtype, int world_size, int node_ranks) {
  const double type = compute_dtype_bytes(dtype);
  const double masters = dtype == ComputeDtype::fp32 ? 0 : 4;
  ShardedHostNeed need{size, dtype, std::max(1, world_size), std::max(1, node_ranks)};
  need.bytes_per_parameter = type + 4 + 8 + masters;  // shard, fp32 gradient shard, moments, masters
  need.state_bytes = need.bytes_per_parameter * size.parameters / need.world_size;
  const double gathered = (size.outer_unit + 2 * size.largest_block) * type;
  // Gradients land in fp32 unit buffers: unit 0's waits for the embeddings' (the last backward
  // reaches) while a block's fills and the one before is reduced; meanwhile a tied head's
  // gradient, and then the embeddings' as autograd makes it, wait beside it in the training type.
  const double gradients = (size.outer_unit + 2 * size.largest_block) * 4 + size.outer_unit * type;
  need.in_flight_bytes = gathered + gradients;
  need.node_bytes = (need.state_bytes + need.in_flight_bytes) * need.node_ranks;
  return need;
}

std::optional<std::string> sharded_host_shortfall(const ShardedHostNeed& need, double available_bytes) {
  if (need.node_bytes <= available_bytes) return std::nullopt;
  char text[640];
  std::snprintf(text, sizeof text,
                "--shard_parameters: this model's %.3g billion parameters need %.1f GiB of host memory on this node "
                "(%d rank%s x %.1f GiB: %g bytes per parameter over %d rank%s for the %s shards, their fp32 "
                "gradients and AdamW state, plus %.1f GiB of units in flight), and it has %.1f GiB available: "
                "run on more nodes or fewer ranks per node, or use a smaller model",
                need.size.parameters / 1e9, need.node_bytes / kGiB, need.node_ranks, plural(need.node_ranks),
                (need.state_bytes + need.in_flight_bytes) / kGiB, need.bytes_per_parameter, need.world_size,
                plural(need.world_size), dtype_name(need.dtype), need.in_flight_bytes / kGiB, available_bytes / kGiB);
  return std::string(text);
}

std::string describe_sharded_host_need(const ShardedHostNeed& need, double available_bytes) {
  char text[512];
  std::snprintf(text, sizeof text,
                "--shard_parameters: each rank holds about %s of host memory before activations (%g bytes per "
                "parameter over %d rank%s for the %s shards, their fp32 gradients and AdamW state, plus %s of "
                "units in flight); this node's %d rank%s: %s of the %.1f GiB available",
                size_text(need.state_bytes + need.in_flight_bytes).c_str(), need.bytes_per_parameter, need.world_size,
                plural(need.world_size), dtype_name(need.dtype), size_text(need.in_flight_bytes).c_str(),
                need.node_ranks, plural(need.node_ranks), size_text(need.node_bytes).c_str(), available_bytes / kGiB);
  return text;
}

int ranks_on_this_node() {
  const char* value = std::getenv("LOCAL_WORLD_SIZE");
  const int ranks = value ? std::atoi(value) : 1;
  return ranks > 0 ? ranks : 1;
}

std::optional<double> cgroup_memory_headroom(const std::filesystem::path& root, std::string_view proc_self_cgroup) {
  // Limits of "unlimited" in v1 are near 2^63.
  constexpr double kNoLimit = 1e18;
  std::optional<double> headroom;
  const auto walk = [&](std::filesystem::path dir, const char* limit, const char* usage, const char* inactive) {
    for (; dir.has_relative_path(); dir = dir.parent_path()) {
      const std::filesystem::path here = root.string() + dir.string();
      const std::optional<double> max = read_number(here / limit), used = read_number(here / usage);
      if (!max || !used || *max >= kNoLimit) continue;
      const double reclaimable = read_number(here / "memory.stat", inactive).value_or(0);
      const double left = std::max(0.0, *max - std::max(0.0, *used - reclaimable));
      headroom = headroom ? std::min(*headroom, left) : left;
    }
  };
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path": v2's is "0::/path", v1's memory controller "N:memory:/path".
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::filesystem::path path = line.substr(second + 1);
    if (controllers.empty()) walk(path, "memory.max", "memory.current", "inactive_file");
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") walk(std::filesystem::path("/memory") / path.relative_path(), "memory.limit_in_bytes", "memory.usage_in_bytes",
                                 "total_inactive_file");
    }
  }
  return headroom;
}

std::optional<double> available_host_memory() {
  const std::optional<double> kib = read_number("/proc/meminfo", "MemAvailable:");
  if (!kib) return std::nullopt;
  std::ifstream cgroup_file("/proc/self/cgroup");
  std::stringstream cgroup;
  cgroup << cgroup_file.rdbuf();
  const std::optional<double> cgroup_left = cgroup_memory_headroom("/sys/fs/cgroup", cgroup.str());
  return std::min(*kib * 1024.0, cgroup_left.value_or(*kib * 1024.0));
}

}  // namespace llmrdzv::train
