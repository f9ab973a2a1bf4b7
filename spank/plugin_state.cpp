// The plugin's shared state and error reporting (see plugin_state.hpp).
#include "plugin_state.hpp"

#include <fstream>

extern "C" {
#include <slurm/spank.h>
}

namespace llmrdzv::spank {

PluginState& state() {
  static PluginState instance;
  return instance;
}

int report(const std::string& message) {
  slurm_error("llm-rdzv: %s", message.c_str());
  return -1;
}

PortRange kernel_ephemeral_ports() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned lo = 32768, hi = 60999;
  in >> lo >> hi;
  return {std::uint16_t(lo), std::uint16_t(hi)};
}

}  // namespace llmrdzv::spank
