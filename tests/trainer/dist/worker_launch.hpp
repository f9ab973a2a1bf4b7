// Starting dist-test-worker ranks against a real rdzvd (or alone, as the one-process reference)
// and collecting their output, for the distributed tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "rdzvd_process.hpp"
#include "scratch_dir.hpp"

namespace llmrdzv::testing {

struct WorkerRun {
  std::vector<int> exit_codes;
  std::vector<std::vector<std::string>> stdout_lines;  // per process
  std::vector<std::string> stderr_texts;
};

// Starts `world` workers with `args` in one rendezvous of a fresh rdzvd and waits for all.
WorkerRun run_workers(int world, const std::vector<std::string>& args);
// One worker without any rendezvous env: the single-process reference.
WorkerRun run_reference(const std::vector<std::string>& args);

// Fails the test with every worker's stderr unless all exited 0.
void require_success(const WorkerRun& run);

// All lines of all workers that start with `prefix`.
std::vector<std::string> lines_with(const WorkerRun& run, const std::string& prefix);

std::string worker_path();

}  // namespace llmrdzv::testing
