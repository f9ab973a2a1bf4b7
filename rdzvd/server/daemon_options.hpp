// Everything rdzvd can be told: the YAML config file (etc/rdzvd.yaml documents every key) with
// command-line flags on top. Bad input raises OptionsError naming the flag or key; main() prints
// it and exits 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/core/core.hpp"

namespace llmrdzv::server {

class OptionsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DaemonOptions {
  bool help = false;
  std::string config_file;
  std::string listen = "0.0.0.0:0";
  std::string port_file;
  int port_fd = -1;  // an inherited descriptor to report the port on, then close; -1 = none
  std::optional<PortRange> port_range;
  std::uint32_t port_probes = kDefaultPortProbes;
  core::Mode mode = core::Mode::step;
  std::string rdzv_id;
  std::optional<core::ParticipantRange> participants;  // step mode: the rendezvous' MIN:MAX
  std::string token_file;
  std::string site_secret_file;
  bool exit_with_parent = false;
  std::uint32_t idle_timeout_s = 0;  // 0 = never exit for idleness
  core::CoreSettings core;
  core::LogLevel log_level = core::LogLevel::info;
  bool syslog = false;
  // limits.max_value_size and 1 MiB for its key and the rest of the message: a larger limit would
  // only let a peer make the daemon hold more per call.
  std::uint32_t max_message_bytes = (16u << 20) + (1u << 20);
  // Connections one peer (a uid on this node other than root and rdzvd's own, or another node's
  // address) may hold before they said Hello with the token; past it the oldest is shut down. 0 = no bound. Applies on IPv4 listen addresses (connection_limit.hpp).
  std::uint32_t max_unauthenticated_per_peer = 256;
  std::string metrics_listen;  // HOST:PORT of the /metrics endpoint; empty: not served
  bool metrics_expose_ids = false;  // per-rendezvous series labelled with the rendezvous id
};

// Parses argv (without argv[0]). Reads the --config file, if any, first, then applies the flags.
DaemonOptions parse_options(const std::vector<std::string>& args);

// Checks that hold only at startup (the --port-fd descriptor is open: it is closed once the port
// is written, so a SIGHUP reload must not check it again). Throws OptionsError.
void check_startup_only(const DaemonOptions& options);

// The keys a SIGHUP reload applies; returns one "key: old -> new" line per change. Throws
// OptionsError, and changes nothing, when the running options with those keys applied would fail
// the checks parse_options makes.
std::vector<std::string> apply_reload(DaemonOptions& running, const DaemonOptions& reloaded);

// Reads the step token (--token-file, else env LLM_RDZV_TOKEN, which is then removed from the
// environment) or the site secret, trimmed of trailing whitespace; a missing or empty one throws.
core::AuthConfig load_auth(const DaemonOptions& options);

core::LogLevel parse_log_level(const std::string& text, const std::string& key);
const char* log_level_name(core::LogLevel level);

extern const char* const kUsage;

}  // namespace llmrdzv::server
