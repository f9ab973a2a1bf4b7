// Chooses the backend from the training device (see process_group.hpp).
#include "llmrdzv/dist/process_group.hpp"

#include <stdexcept>

namespace llmrdzv::dist {

c10::intrusive_ptr<c10d::Backend> make_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int world_size, c10::Device device,
                                                     const ProcessGroupSettings& settings) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument("process group: rank " + std::to_string(rank) +
                                " is outside a world of " + std::to_string(world_size));
  }
  if (device.is_cpu()) return make_gloo_backend(store, rank, world_size, settings);
  if (device.is_cuda()) return make_nccl_backend(store, rank, world_size, device, settings);
  throw std::invalid_argument("process group: no backend for device " + device.str());
}

}  // namespace llmrdzv::dist
