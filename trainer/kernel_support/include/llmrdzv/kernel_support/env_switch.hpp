// Environment switches that turn one of the trainer's own fast paths off (LLMRDZV_BLIS=0,
// LLMRDZV_CUDA_KERNELS=0): for an A/B run, or to step around a suspected bug.
#pragma once

#include <cstdlib>
#include <string_view>

namespace llmrdzv::kernel_support {

// True when `variable` is set to 0 in the environment.
inline bool switched_off(const char* variable) {
  const char* value = std::getenv(variable);
  return value && std::string_view(value) == "0";
}

// The trainer's own CUDA kernels (the fused loss's softmax rows, the mixed-precision AdamW) are
// used unless LLMRDZV_CUDA_KERNELS=0; read once.
inline bool cuda_kernels_enabled() {
  static const bool enabled = !switched_off("LLMRDZV_CUDA_KERNELS");
  return enabled;
}

}  // namespace llmrdzv::kernel_support
