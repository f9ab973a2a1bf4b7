// The per-rank share of a node's GPUs and cores (see rank_resources.hpp).
#include "llmrdzv/dist/rank_resources.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace llmrdzv::dist {

int cuda_device_for(int local_rank, int visible_devices) {
  if (visible_devices < 1) throw std::invalid_argument("no CUDA device is visible to this rank");
  return std::max(0, local_rank) % visible_devices;
}

int threads_per_rank(int available_cpus, int node_cpus, int local_world_size) {
  if (available_cpus < node_cpus) return std::max(1, available_cpus);
  return std::max(1, node_cpus / std::max(1, local_world_size));
}

int node_cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return node_cpus();
}

std::string describe_cuda_binding(int device, int visible_devices) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return "cuda:" + std::to_string(device) + " of " + std::to_string(visible_devices) + " visible" +
         (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string());
}

}  // namespace llmrdzv::dist
