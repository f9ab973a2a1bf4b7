// A child process for the integration tests: started with argv and extra environment, stdout
// read line by line through a pipe, stderr kept in a file (so a chatty daemon never blocks on a
// full pipe), killed and reaped when the test is done with it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmrdzv::testing {

class ChildProcess {
 public:
  // argv[0] is the program path. `env` entries are added to (or override) this process' environ;
  // a value of std::nullopt removes the variable.
  ChildProcess(std::vector<std::string> argv, const std::map<std::string, std::optional<std::string>>& env,
               std::string stderr_path);
  ~ChildProcess();  // SIGKILL and reap if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next stdout line, or nullopt on timeout or end of output.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Every remaining stdout line until the stream ends (or the timeout passes).
  std::vector<std::string> read_remaining_lines(std::chrono::milliseconds timeout);
  void send_signal(int signal);
  // Exit status, or 128 + signal when killed; nullopt if still running after `timeout`. Keeps
  // reading stdout meanwhile (for later read_line), so a child never blocks on a full pipe.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  std::string stderr_text() const;

 private:
  // Appends what stdout has within `timeout` to the buffer; marks the end of output.
  void drain_stdout(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool stdout_closed_ = false;
  std::optional<int> exit_status_;
  std::string stderr_path_;
};

}  // namespace llmrdzv::testing
