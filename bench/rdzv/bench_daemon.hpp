// The rdzvd a benchmark run measures: started by rdzv-bench itself (step mode, ephemeral port on
// loopback, a fresh token; the project's one launcher) so its peak RSS can be read from /proc,
// and stopped with SIGTERM. The benchmark's sessions send no heartbeats, so the heartbeat
// timeout is long.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "llmrdzv/launch/daemon_launch.hpp"

namespace llmrdzv::bench {

class BenchDaemon {
 public:
  // Starts `rdzvd_path` and waits until it listens; throws std::runtime_error with its output.
  // `metrics_listen` (HOST:PORT, empty: none): where it serves /metrics.
  BenchDaemon(const std::string& rdzvd_path, const std::string& rdzv_id, const std::string& metrics_listen);
  ~BenchDaemon();  // SIGTERM, then SIGKILL if it does not exit within 5 s; removes the scratch dir
  BenchDaemon(const BenchDaemon&) = delete;
  BenchDaemon& operator=(const BenchDaemon&) = delete;

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(daemon_.port); }
  const std::string& token() const { return token_; }
  pid_t pid() const { return daemon_.pid; }

 private:
  std::string scratch_;  // its log
  std::string token_;
  launch::RunningDaemon daemon_;
};

// VmHWM (peak resident set) of a process in MiB, if /proc tells.
std::optional<double> peak_rss_mib(pid_t pid);

// User + system CPU time a process has used so far, in ms, if /proc tells.
std::optional<double> cpu_time_ms(pid_t pid);

}  // namespace llmrdzv::bench
