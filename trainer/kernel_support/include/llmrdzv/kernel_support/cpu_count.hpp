// How many CPUs this process may use: its affinity mask, which Slurm's task binding and cgroup
// cpusets narrow, not the machine's core count. Shared by the ranks' torch threads (dist) and the
// tokenizer trainer's counting threads, which must not oversubscribe a job's CPU set.
#pragma once

#include <sched.h>

#include <algorithm>
#include <thread>

namespace llmrdzv::kernel_support {

// The CPUs of the machine.
inline int node_cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// The CPUs this process may run on (at least 1).
inline int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return node_cpus();
}

}  // namespace llmrdzv::kernel_support
