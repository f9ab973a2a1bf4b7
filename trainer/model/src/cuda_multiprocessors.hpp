// The number of streaming multiprocessors of a CUDA device, which sizes the grids of the trainer's
// kernels that stride rows (a few blocks per multiprocessor). For translation units built with
// the CUDA kernels only (LLMRDZV_HAVE_CUDA_KERNELS).
#pragma once

#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

namespace llmrdzv::model::detail {

inline std::int64_t multiprocessors(const at::Device& device) {
  return at::cuda::getDeviceProperties(device.index())->multiProcessorCount;
}

}  // namespace llmrdzv::model::detail
