// describe_cuda_device (gpu_check.hpp): the driver's UUID of a CUDA device, written as
// nvidia-smi writes it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). Compiled against the CUDA
// LibTorch on every build; it can only run on a GPU.
#include <ATen/cuda/CUDAContext.h>

#include <cstdio>

#include "llmrdzv/dist/gpu_check.hpp"

namespace llmrdzv::dist {

RankGpu describe_cuda_device(int rank, int index, int visible) {
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  const auto* b = reinterpret_cast<const unsigned char*>(properties->uuid.bytes);
  char uuid[48];
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return RankGpu{.rank = rank, .host = host_name(), .uuid = uuid, .index = index, .visible = visible};
}

}  // namespace llmrdzv::dist
