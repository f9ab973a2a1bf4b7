// The torch side of precision.hpp: what the training device offers, and switching TF32 on or off.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "llmrdzv/train/precision.hpp"

namespace llmrdzv::train {

// The CPU's traits, or the CUDA device's name and compute capability.
DeviceTraits device_traits(const c10::Device& device);
// TF32 for fp32 matmuls (cuBLAS) and convolutions (cuDNN) as `precision` says.
void apply_math_modes(const Precision& precision);
c10::ScalarType scalar_type(ComputeDtype dtype);

}  // namespace llmrdzv::train
