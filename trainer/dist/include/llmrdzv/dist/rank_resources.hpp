// What one rank takes of its node when several ranks share it: its GPU among the devices the
// process can see, and its share of the CPU cores for torch's threads. Torch-free, so the rules
// are tested on this GPU-less machine.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/kernel_support/cpu_count.hpp"

namespace llmrdzv::dist {

// The CUDA device index for the rank with `local_rank` when the process sees `visible_devices`
// GPUs. Slurm's per-task binding (--gpus-per-task, --gpu-bind) or a per-task CUDA_VISIBLE_DEVICES
// leaves each task its own devices, so the local rank picks among them modulo their number: with
// one visible GPU that is device 0, with one per local rank it is device LOCAL_RANK (torchrun's
// convention). Throws std::invalid_argument when no device is visible.
int cuda_device_for(int local_rank, int visible_devices);

// torch threads for one of `local_world_size` ranks on a node of `node_cpus` cores when its
// affinity allows `available_cpus`: all of them when a task binding narrowed the mask (they are
// its own), else an equal share of the node, at least 1 (torchrun's OMP_NUM_THREADS=1, refined).
int threads_per_rank(int available_cpus, int node_cpus, int local_world_size);

// CPUs this process may run on (its affinity mask, which Slurm's task binding narrows), and
// the CPUs of the machine.
using kernel_support::available_cpus;
using kernel_support::node_cpus;

// "cuda:1 (CUDA_VISIBLE_DEVICES=2,3)" style description of the binding for the log.
std::string describe_cuda_binding(int device, int visible_devices);

// This machine's host name (gethostname), or "localhost" when it has none.
std::string host_name();

// The GPU one rank binds, as the other ranks compare it: its node, the device's UUID (the same
// GPU has the same UUID whatever CUDA_VISIBLE_DEVICES renumbers it to), and its index as the rank
// sees it (for the message).
struct RankGpu {
  int rank = 0;
  std::string host;
  std::string uuid;
  int index = 0;
  int visible = 1;  // GPUs this rank sees
};

// One line per rank, "rank host uuid index visible" (host and uuid hold no spaces), and back.
// parse_rank_gpus throws std::invalid_argument naming a malformed line.
std::string rank_gpu_line(const RankGpu& gpu);
std::vector<RankGpu> parse_rank_gpus(std::string_view lines);

// NCCL runs one rank per GPU; two ranks on one GPU fail deep inside NCCL ("Duplicate GPU
// detected") after seconds. nullopt when every rank has a GPU of its own, else one line that
// names the ranks, the node and the GPU, and says what to do.
std::optional<std::string> shared_gpu_problem(std::vector<RankGpu> gpus);

}  // namespace llmrdzv::dist
