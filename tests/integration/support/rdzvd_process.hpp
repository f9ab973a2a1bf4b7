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
  // Starts rdzvd and waits until it wrote its port file; throws with rdzvd's stderr otherwise.
  RdzvdProcess(const ScratchDir& dir, RdzvdConfig config = {});

  const std::string& rdzv_id() const { return config_.rdzv_id; }
  const std::string& token() const { return token_; }
  // Site mode: the token of this uid for any rendezvous id.
  std::string token_for(const std::string& rdzv_id) const;
  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  ChildProcess& process() { return *process_; }
  std::string log() const { return process_->stderr_text(); }

  // Options for an in-test client of a fixed-size rendezvous.
  client::Options client_options(std::int32_t world_size) const;
  // The env contract for a test-client process.
  std::map<std::string, std::optional<std::string>> client_env(std::int32_t world_size) const;

 private:
  RdzvdConfig config_;
  std::string token_;
  std::string site_secret_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace llmrdzv::testing
