// Implementation of the test-client fleet helpers (see test_clients.hpp).
#include "test_clients.hpp"

#include <stdexcept>

#include "line_fields.hpp"

namespace llmrdzv::testing {

std::vector<std::unique_ptr<ChildProcess>> launch_test_clients(const ScratchDir& dir, const RdzvdProcess& rdzvd,
                                                               std::int32_t world_size, const ClientLaunch& launch) {
  std::vector<std::unique_ptr<ChildProcess>> processes;
  for (int i = 0; i < launch.processes; ++i) {
    auto env = rdzvd.client_env(world_size);
    if (launch.env_for) {
      for (const auto& [name, value] : launch.env_for(i)) env[name] = value;
    }
    std::vector<std::string> argv = {test_client_path(), "--participants",
                                     std::to_string(launch.participants_per_process)};
    argv.insert(argv.end(), launch.args.begin(), launch.args.end());
    processes.push_back(std::make_unique<ChildProcess>(argv, env, dir.file("client-" + std::to_string(i) + ".err")));
  }
  return processes;
}

std::vector<std::map<std::string, std::string>> collect_lines(std::vector<std::unique_ptr<ChildProcess>>& processes,
                                                              const std::string& prefix, int per_process,
                                                              std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  std::vector<std::map<std::string, std::string>> result;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    for (int found = 0; found < per_process;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
      const auto line = processes[i]->read_line(std::max(left, std::chrono::milliseconds(0)));
      if (!line) {
        throw std::runtime_error("client process " + std::to_string(i) + " printed " + std::to_string(found) + " of " +
                                 std::to_string(per_process) + " '" + prefix + "' lines; its stderr:\n" +
                                 processes[i]->stderr_text());
      }
      if (line->starts_with(prefix)) {
        result.push_back(line_fields(*line));
        ++found;
      }
    }
  }
  return result;
}

}  // namespace llmrdzv::testing
