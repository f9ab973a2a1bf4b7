// rdzvd's command line for one step (see rdzvd_launch.hpp).
#include "rdzvd_launch.hpp"

namespace llmrdzv::spank {

std::vector<std::string> rdzvd_arguments(const SiteConfig& site, const StepSettings& settings,
                                         const StepLayout& layout, const std::string& rdzv_id,
                                         std::uint16_t base_port) {
  const WorldBounds world = world_bounds(settings, layout);
  std::vector<std::string> args = {
      "--listen",    "0.0.0.0:" + std::to_string(base_port),
      "--port-range", describe(settings.ports),
      "--port-probes", std::to_string(settings.port_probes),
      "--mode",      "step",
      "--rdzv-id",   rdzv_id,
      "--participants", std::to_string(world.min) + ":" + std::to_string(world.max),
      "--exit-with-parent",
  };
  const auto add = [&args](const char* flag, std::uint32_t value) {
    if (value == 0) return;
    args.push_back(flag);
    args.push_back(std::to_string(value));
  };
  add("--idle-timeout", site.idle_timeout_s);
  add("--heartbeat-interval", site.heartbeat_interval_ms);
  add("--heartbeat-timeout", site.heartbeat_timeout_ms);
  add("--last-call", site.last_call_ms);
  if (!site.log_level.empty()) {
    args.push_back("--log-level");
    args.push_back(site.log_level);
  }
  return args;
}

}  // namespace llmrdzv::spank
