// ProcessGroupGloo over our store. Its headers need Gloo's, which the torch wheel lacks and
// Debian's libgloo-dev supplies; the Gloo code itself is inside libtorch_cpu.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "llmrdzv/dist/process_group.hpp"
#include "llmrdzv/dist/rank_resources.hpp"

namespace llmrdzv::dist {

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size,
                                                    const ProcessGroupSettings& settings) {
  auto options = c10d::ProcessGroupGloo::Options::create(settings.timeout);
  options->devices.push_back(
      settings.gloo_interface.empty()
          ? c10d::ProcessGroupGloo::createDeviceForHostname(
                settings.gloo_hostname.empty() ? host_name() : settings.gloo_hostname)
          : c10d::ProcessGroupGloo::createDeviceForInterface(settings.gloo_interface));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

}  // namespace llmrdzv::dist
