// DeviceTraits (precision.hpp) of the training device, from the CUDA driver's properties and its
// free memory now.
#include "device_traits.hpp"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace llmrdzv::train {

DeviceTraits device_traits(const c10::Device& device) {
  DeviceTraits traits;
  if (!device.is_cuda()) return traits;
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index());
  traits.cuda = true;
  traits.name = properties->name;
  traits.compute_capability_major = properties->major;
  const c10::cuda::CUDAGuard on_device(device.index() < 0 ? 0 : device.index());
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) traits.free_memory_bytes = static_cast<double>(free);
  return traits;
}

void apply_math_modes(const Precision& precision) {
  // "high" lets fp32 matrix products use TF32 (torch.set_float32_matmul_precision), "highest" not.
  at::globalContext().setFloat32MatmulPrecision(precision.tf32 ? "high" : "highest");
  at::globalContext().setAllowTF32CuDNN(precision.tf32);
}

c10::ScalarType scalar_type(ComputeDtype dtype) {
  switch (dtype) {
    case ComputeDtype::bf16: return at::kBFloat16;
    case ComputeDtype::fp16: return at::kHalf;
    case ComputeDtype::fp32: break;
  }
  return at::kFloat;
}

}  // namespace llmrdzv::train
