// The element types the trainer's CUDA kernels take, named without CUDA's or torch's headers so
// that the kernels' declarations can be included by any translation unit.
#pragma once

namespace llmrdzv::kernel_support {

enum class DeviceElement { f32, bf16, f16 };

}  // namespace llmrdzv::kernel_support
