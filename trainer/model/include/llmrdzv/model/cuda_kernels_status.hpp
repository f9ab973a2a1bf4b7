// Whether the trainer's own CUDA kernels (the fused loss's softmax rows, the mixed-precision
// AdamW) run on a GPU in this process, so the trainer can say so in its log.
#pragma once

#include <string>

namespace llmrdzv::model {

// "on", "off (LLMRDZV_CUDA_KERNELS=0)" or "not in this build (built without a CUDA compiler)".
std::string cuda_kernels_status();

}  // namespace llmrdzv::model
