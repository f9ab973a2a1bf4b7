// The per-rank share of a node's GPUs and cores (see rank_resources.hpp).
#include "llmrdzv/dist/rank_resources.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace llmrdzv::dist {

int cuda_device_for(int local_rank, int visible_devices) {
  if (visible_devices < 1) throw std::invalid_argument("no CUDA device is visible to this rank");
  return std::max(0, local_rank) % visible_devices;
}

int threads_per_rank(int available_cpus, int node_cpus, int local_world_size) {
  if (available_cpus < node_cpus) return std::max(1, available_cpus);
  return std::max(1, node_cpus / std::max(1, local_world_size));
}


std::string describe_cuda_binding(int device, int visible_devices) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return "cuda:" + std::to_string(device) + " of " + std::to_string(visible_devices) + " visible" +
         (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string rank_gpu_line(const RankGpu& gpu) {
  return std::to_string(gpu.rank) + ' ' + gpu.host + ' ' + gpu.uuid + ' ' + std::to_string(gpu.index) + ' ' +
         std::to_string(gpu.visible) + '\n';
}

std::vector<RankGpu> parse_rank_gpus(std::string_view lines) {
  std::vector<RankGpu> gpus;
  std::istringstream in{std::string(lines)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    RankGpu gpu;
    std::string rest;
    if (!(fields >> gpu.rank >> gpu.host >> gpu.uuid >> gpu.index >> gpu.visible) || (fields >> rest) ||
        gpu.rank < 0 || gpu.index < 0 || gpu.visible < 1) {
      throw std::invalid_argument("malformed GPU report from a rank: '" + line + "'");
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::optional<std::string> shared_gpu_problem(std::vector<RankGpu> gpus) {
  std::map<std::pair<std::string, std::string>, std::vector<RankGpu>> by_gpu;
  for (RankGpu& gpu : gpus) by_gpu[{gpu.host, gpu.uuid}].push_back(std::move(gpu));
  // The first shared GPU in (host, uuid) order, so every rank reports the same one.
  for (auto& [where, sharing] : by_gpu) {
    if (sharing.size() < 2) continue;
    std::sort(sharing.begin(), sharing.end(), [](const RankGpu& a, const RankGpu& b) { return a.rank < b.rank; });
    std::string ranks;
    for (std::size_t i = 0; i < sharing.size(); ++i) {
      ranks += (i == 0 ? "" : i + 1 == sharing.size() ? " and " : ", ") + std::to_string(sharing[i].rank);
    }
    const RankGpu& first = sharing.front();
    std::size_t ranks_on_host = 0;
    for (const auto& [other, users] : by_gpu) ranks_on_host += other.first == first.host ? users.size() : 0;
    return "ranks " + ranks + " would share one GPU (" + first.uuid + ", cuda:" + std::to_string(first.index) +
           " of " + std::to_string(first.visible) + " visible) on " + first.host + "; NCCL needs a GPU per rank: start at most " +
           std::to_string(first.visible) + " rank" + (first.visible == 1 ? "" : "s") + " on that node (" +
           std::to_string(ranks_on_host) + " ran there; srun --ntasks-per-node, trainer --nproc) or give every task its own GPU "
           "(srun --gpus-per-task=1), or train on the CPU with --use_cpu";
  }
  return std::nullopt;
}

}  // namespace llmrdzv::dist
