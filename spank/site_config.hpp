// The site's settings for the plugin: the arguments after the plugin path in plugstack.conf.
// A bad or unknown argument fails the plugin at load, naming the argument.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "args.hpp"

namespace llmrdzv::spank {

struct SiteConfig {
  std::string rdzvd_path;  // default: the installed rdzvd (set by the caller)
  PortRange port_range{29500, 29999};
  std::uint32_t port_probes = kDefaultPortProbes;
  Mode mode = Mode::step;
  std::optional<std::string> server;       // site mode: host:port of the site's rdzvd
  std::optional<std::string> secret_file;  // site mode: root-only file with the HMAC secret
  AddrPolicy addr;
  std::uint32_t timeout_s = 300;            // LLM_RDZV_TIMEOUT: how long tasks wait to join
  std::uint32_t heartbeat_interval_ms = 0;  // 0: rdzvd's default
  std::uint32_t heartbeat_timeout_ms = 0;   // 0: rdzvd's default
  std::uint32_t last_call_ms = 0;           // 0: rdzvd's default
  std::uint32_t idle_timeout_s = 0;         // 0: rdzvd's default
  std::uint32_t start_timeout_ms = 10000;   // how long the plugin waits for rdzvd to listen
  std::string log_dir;                      // empty: rdzvd's stderr is discarded
  std::string log_level;                    // empty: rdzvd's default
  bool default_on = false;                  // inject into every step without --llm-rdzv
};

// The plugstack.conf arguments (the one list: parser, "known:" error, man page check).
const std::vector<KeySpec<SiteConfig>>& site_keys();

// Parses plugstack.conf arguments ("key=value" each). `ephemeral` is the kernel's ephemeral
// port range, which port_range must avoid. Throws ArgError naming the argument.
SiteConfig parse_site_config(const std::vector<std::string>& args, std::string default_rdzvd,
                             const PortRange& ephemeral);

}  // namespace llmrdzv::spank
