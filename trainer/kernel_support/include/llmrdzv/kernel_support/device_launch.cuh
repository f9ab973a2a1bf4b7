// What every launcher of the trainer's CUDA kernels does around its launches (nvcc only): pick the
// CUDA type of a DeviceElement, and turn a failed launch into an exception that names the launcher.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_element.hpp"

namespace llmrdzv::kernel_support {

// launch.template run<T>() with T = float, __nv_bfloat16 or __half for `element`.
template <typename Launch>
void with_device_type(DeviceElement element, const Launch& launch) {
  switch (element) {
    case DeviceElement::f32: launch.template run<float>(); break;
    case DeviceElement::bf16: launch.template run<__nv_bfloat16>(); break;
    case DeviceElement::f16: launch.template run<__half>(); break;
  }
}

// After a launcher's launches: std::runtime_error naming it if one of them failed.
inline void check_launched(const char* launcher) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(launcher) + ": a kernel did not launch: " + cudaGetErrorString(error));
  }
}

}  // namespace llmrdzv::kernel_support
