// Before NCCL forms its communicator, the ranks compare the GPUs they bound through the round's
// store, so ranks that would share a GPU stop at once with one clear line (NCCL itself fails
// seconds later with "Duplicate GPU detected" and a stack trace).
#pragma once

#include <chrono>
#include <stdexcept>

#include "llmrdzv/dist/rank_resources.hpp"

namespace llmrdzv::dist {

class RdzvStore;

// Two or more ranks bound one GPU; what() is shared_gpu_problem's line.
class SharedGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every rank appends `mine` to one key of `store`, waits for all `world_size` ranks (a store
// barrier, bounded by `timeout`) and reads every rank's report: throws SharedGpuError when two
// ranks bound the same GPU (every rank reaches the same verdict), std::invalid_argument for a
// malformed report. Use a store prefix no process group uses.
void require_own_gpus(RdzvStore& store, int world_size, const RankGpu& mine, std::chrono::milliseconds timeout);

// How this process sees CUDA device `index` (UUID from the driver), for rank `rank` that sees
// `visible` devices. Needs a GPU (gpu_identity_cuda.cpp).
RankGpu describe_cuda_device(int rank, int index, int visible);

}  // namespace llmrdzv::dist
