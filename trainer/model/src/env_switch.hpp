// Environment switches that turn one of the model's own fast paths off (LLMRDZV_BLIS=0,
// LLMRDZV_CUDA_KERNELS=0): for an A/B run, or to step around a suspected bug.
#pragma once

#include <cstdlib>
#include <string_view>

namespace llmrdzv::model::detail {

// True when `variable` is set to 0 in the environment.
inline bool switched_off(const char* variable) {
  const char* value = std::getenv(variable);
  return value && std::string_view(value) == "0";
}

}  // namespace llmrdzv::model::detail
