// Runs the real `trainer` binary (path baked in at build time) as a child process and captures
// its exit code, stdout and stderr, for the end-to-end training tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scratch_dir.hpp"

namespace trainer_test {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Where the child's stdout goes: a file read back by stdout_text(), or the write end of a pipe
// whose read end is already closed (every write to it fails with EPIPE and raises SIGPIPE).
enum class Stdout { captured, closed_pipe };

RunResult run_trainer(const std::vector<std::string>& args, Stdout stdout_to = Stdout::captured);

// A trainer running in the background, its output captured in files; killed (SIGKILL) and reaped
// when the object goes. `address_space_limit` > 0 caps the child's virtual memory (RLIMIT_AS, in
// bytes), so that a test can make allocations fail.
class TrainerProcess {
 public:
  explicit TrainerProcess(const std::vector<std::string>& args, Stdout stdout_to = Stdout::captured,
                          std::uint64_t address_space_limit = 0);
  ~TrainerProcess();
  TrainerProcess(const TrainerProcess&) = delete;
  TrainerProcess& operator=(const TrainerProcess&) = delete;

  bool running();
  int pid() const { return pid_; }
  std::string stdout_text() const;
  std::string stderr_text() const;
  // SIGKILL (if still running) and reap; returns the exit status as run_trainer reports it.
  int kill_now();
  int wait();

 private:
  llmrdzv::testing::ScratchDir capture_{"trainer-proc"};  // stdout and stderr
  int pid_ = -1;
  int status_ = -1;
};


}  // namespace trainer_test
