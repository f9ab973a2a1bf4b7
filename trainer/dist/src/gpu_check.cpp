// The shared-GPU check of gpu_check.hpp: one append, one barrier and one read per rank.
#include "llmrdzv/dist/gpu_check.hpp"

#include <string>
#include <vector>

#include "llmrdzv/dist/rdzv_store.hpp"

namespace llmrdzv::dist {

void require_own_gpus(RdzvStore& store, int world_size, const RankGpu& mine, std::chrono::milliseconds timeout) {
  const std::string line = rank_gpu_line(mine);
  store.append("gpus", std::vector<std::uint8_t>(line.begin(), line.end()));
  store.barrier("gpus-reported", world_size, timeout);
  const std::vector<std::uint8_t> all = store.get("gpus");
  if (const auto problem = shared_gpu_problem(parse_rank_gpus(std::string(all.begin(), all.end())))) {
    throw SharedGpuError(*problem);
  }
}

}  // namespace llmrdzv::dist
