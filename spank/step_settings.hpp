// One step's effective rendezvous settings: the user's --llm-rdzv keys over the site defaults.
#pragma once

#include <optional>
#include <string>

#include "site_config.hpp"
#include "user_options.hpp"

namespace llmrdzv::spank {

struct StepSettings {
  Mode mode = Mode::step;
  PortRange ports;
  std::optional<NodeBounds> nodes;
  std::uint32_t timeout_s = 0;
  std::uint32_t port_probes = kDefaultPortProbes;  // the site's: how many candidate ports rdzvd and clients walk
  AddrPolicy addr;
  std::optional<std::string> id;
};

// Throws ArgError when the user's keys cannot work at this site (mode=site without a site
// rdzvd, ports inside the kernel's ephemeral range, the site's default range included).
StepSettings resolve_step_settings(const SiteConfig& site, const UserOptions& user,
                                   const PortRange& ephemeral);

}  // namespace llmrdzv::spank
