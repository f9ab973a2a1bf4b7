// Launching and reaping dist-test-worker processes (see worker_launch.hpp).
#include "worker_launch.hpp"

#include <catch2/catch.hpp>

namespace llmrdzv::testing {
namespace {

constexpr std::chrono::seconds kWorkerTimeout{240};

WorkerRun reap(std::vector<std::unique_ptr<ChildProcess>>& processes) {
  WorkerRun run;
  for (auto& p : processes) {
    auto lines = p->read_remaining_lines(kWorkerTimeout);
    const auto status = p->wait(std::chrono::seconds(10));
    run.exit_codes.push_back(status.value_or(-1));
    run.stdout_lines.push_back(std::move(lines));
    run.stderr_texts.push_back(p->stderr_text());
  }
  return run;
}

std::vector<std::string> argv_for(const std::vector<std::string>& args) {
  std::vector<std::string> argv{worker_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

std::string worker_path() { return LLMRDZV_DIST_WORKER_PATH; }

WorkerRun run_workers(int world, const std::vector<std::string>& args) {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  std::vector<std::unique_ptr<ChildProcess>> processes;
  for (int r = 0; r < world; ++r) {
    auto env = rdzvd.client_env(world);
    env["RANK"] = std::to_string(r);
    env["OMP_NUM_THREADS"] = "1";
    processes.push_back(std::make_unique<ChildProcess>(argv_for(args), env,
                                                       dir.file("worker" + std::to_string(r) + ".err")));
  }
  return reap(processes);
}

WorkerRun run_reference(const std::vector<std::string>& args) {
  ScratchDir dir;
  std::vector<std::unique_ptr<ChildProcess>> processes;
  processes.push_back(std::make_unique<ChildProcess>(
      argv_for(args), std::map<std::string, std::optional<std::string>>{{"RDZV_ENDPOINT", std::nullopt},
                                                                        {"OMP_NUM_THREADS", "1"}},
      dir.file("reference.err")));
  return reap(processes);
}

void require_success(const WorkerRun& run) {
  for (std::size_t i = 0; i < run.exit_codes.size(); ++i) {
    INFO("worker " << i << " stderr:\n" << run.stderr_texts[i]);
    REQUIRE(run.exit_codes[i] == 0);
  }
}

std::vector<std::string> lines_with(const WorkerRun& run, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& lines : run.stdout_lines) {
    for (const auto& line : lines) {
      if (line.starts_with(prefix)) found.push_back(line);
    }
  }
  return found;
}

}  // namespace llmrdzv::testing
