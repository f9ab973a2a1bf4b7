// Merges user options over site defaults (see step_settings.hpp).
#include "step_settings.hpp"

namespace llmrdzv::spank {

StepSettings resolve_step_settings(const SiteConfig& site, const UserOptions& user,
                                   const PortRange& ephemeral) {
  StepSettings settings;
  settings.mode = user.mode.value_or(site.mode);
  if (settings.mode == Mode::site && (!site.server || !site.secret_file)) {
    throw ArgError("mode=site: this site runs no site rdzvd (plugstack.conf has no server= and secret_file=)");
  }
  settings.ports = user.ports.value_or(site.port_range);
  // The site's port_range is checked at load where plugstack.conf gives one; the default here.
  check_outside_ephemeral(user.ports ? "port" : "port_range (the site's)", settings.ports, ephemeral);
  settings.nodes = user.nodes;
  settings.timeout_s = user.timeout_s.value_or(site.timeout_s);
  settings.port_probes = site.port_probes;
  settings.addr = user.addr.value_or(site.addr);
  settings.id = user.id;
  return settings;
}

}  // namespace llmrdzv::spank
