// srun (see contexts.hpp): the step's token and its random ports are made here, where the user
// starts the step, and travel to every node's slurmstepd in srun's environment.
#include <cstdlib>
#include <string>

#include "contexts.hpp"
#include "llmrdzv/common/token.hpp"
#include "plugin_state.hpp"
#include "step_settings.hpp"

namespace llmrdzv::spank {

void prepare_local() {
  const StepSettings settings = resolve_step_settings(state().site, state().user, kernel_ephemeral_ports());
  // spank_setenv only works remotely.
  if (settings.mode == Mode::step && setenv(kTokenCarrier, make_random_token().c_str(), 1) != 0) {
    throw ArgError("cannot pass the step's token to the tasks");
  }
  // Unpredictable ports: another user cannot bind the step's rdzvd or MASTER_PORT in advance.
  if (setenv(kPortsCarrier, ports_text(draw_step_ports(settings.ports, settings.port_probes)).c_str(), 1) != 0) {
    throw ArgError("cannot pass the step's ports to the nodes");
  }
}

}  // namespace llmrdzv::spank
