// A real rdzvd (build/bin/rdzvd) for integration tests: step mode on 127.0.0.1 with an ephemeral
// port read back from --port-file, short heartbeat settings so failure tests run fast, and the
// env a test client needs to reach it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "llmrdzv/launch/daemon_launch.hpp"
#include "llmrdzv/client/options.hpp"
#include "scratch_dir.hpp"

namespace llmrdzv::testing {

// Paths of the binaries under test, baked in by CMake.
std::string rdzvd_path();
std::string test_client_path();
std::string rdzvctl_path();

struct RdzvdConfig {
  // "step": serves rdzv_id only, with a random token. "site": any rendezvous, tokens are HMACs of
  // (uid, id) under a site secret (token_for).
  std::string mode = "step";
  std::string rdzv_id = "it.0";
  std::string token;  // empty: a fresh random token
  std::string listen = "127.0.0.1:0";
  std::chrono::milliseconds heartbeat_interval{200};
  std::chrono::milliseconds heartbeat_timeout{1000};
  std::vector<std::string> extra_args;  // e.g. --port-range LO-HI
};

class RdzvdProcess {
 public:
  // Starts rdzvd with the project's launcher (the port comes over a pipe) and waits until it
  // listens; throws with rdzvd's output otherwise. Stopped with SIGKILL when destroyed.
  RdzvdProcess(const ScratchDir& dir, RdzvdConfig config = {});
  ~RdzvdProcess();
  RdzvdProcess(const RdzvdProcess&) = delete;
  RdzvdProcess& operator=(const RdzvdProcess&) = delete;

  const std::string& rdzv_id() const { return config_.rdzv_id; }
  const std::string& token() const { return token_; }
  // Site mode: the token of this uid for any rendezvous id.
  std::string token_for(const std::string& rdzv_id) const;
  std::uint16_t port() const { return port_; }
  int pid() const { return int(daemon_.pid); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void send_signal(int signal) const;
  // Exit status (128 + signal when killed), or nullopt while it still runs after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // What rdzvd wrote (its log on stderr, its port on stdout).
  std::string log() const;

  // Options for an in-test client of a fixed-size rendezvous.
  client::Options client_options(std::int32_t world_size) const;
  // The env contract for a test-client process.
  std::map<std::string, std::optional<std::string>> client_env(std::int32_t world_size) const;

 private:
  RdzvdConfig config_;
  std::string token_;
  std::string site_secret_;
  std::uint16_t port_ = 0;
  std::string log_path_;
  launch::RunningDaemon daemon_;
  std::optional<int> exit_status_;
};

}  // namespace llmrdzv::testing
