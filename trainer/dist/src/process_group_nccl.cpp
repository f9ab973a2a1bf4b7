// ProcessGroupNCCL over our store, bound to this rank's GPU. Compiled and linked against the
// CUDA LibTorch on every build (it proves the NCCL dependency set); it can only run on a GPU.
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "llmrdzv/dist/process_group.hpp"

namespace llmrdzv::dist {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size, c10::Device device,
                                                    const ProcessGroupSettings& settings) {
  // The rank's GPU becomes the current device before anything is allocated on it, so kernels,
  // streams and NCCL's communicator all use the device the engine picked.
  c10::cuda::set_device(device.index());
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = settings.timeout;
  auto backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
  backend->setBoundDeviceId(device);
  return backend;
}

}  // namespace llmrdzv::dist
