// Launching rdzv-test-client processes against an RdzvdProcess and collecting what they print.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "rdzvd_process.hpp"
#include "scratch_dir.hpp"

namespace llmrdzv::testing {

using EnvChanges = std::map<std::string, std::optional<std::string>>;

struct ClientLaunch {
  int processes = 1;
  int participants_per_process = 1;
  std::vector<std::string> args;  // extra flags (--hold-ms, ...)
  // Per-process env changes on top of the rdzvd's client env (e.g. SLURM_PROCID).
  std::function<EnvChanges(int process_index)> env_for;
};

std::vector<std::unique_ptr<ChildProcess>> launch_test_clients(const ScratchDir& dir, const RdzvdProcess& rdzvd,
                                                               std::int32_t world_size, const ClientLaunch& launch);

// Reads from every process until it printed `per_process` lines starting with `prefix`; returns
// them all (fields parsed). Fails the test with the processes' stderr when they do not arrive.
std::vector<std::map<std::string, std::string>> collect_lines(std::vector<std::unique_ptr<ChildProcess>>& processes,
                                                              const std::string& prefix, int per_process,
                                                              std::chrono::milliseconds timeout);

}  // namespace llmrdzv::testing
