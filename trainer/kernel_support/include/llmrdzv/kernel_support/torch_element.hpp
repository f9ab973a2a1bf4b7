// The DeviceElement (device_element.hpp) of a torch scalar type: for the translation units that
// hand torch's tensors to the trainer's CUDA kernels, whose declarations name no torch type.
#pragma once

#include <c10/core/ScalarType.h>

#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_element.hpp"

namespace llmrdzv::kernel_support {

// fp32, bf16 or fp16; std::invalid_argument naming `user` (what refuses it) for any other type.
inline DeviceElement device_element(c10::ScalarType type, const std::string& user) {
  switch (type) {
    case c10::ScalarType::Float: return DeviceElement::f32;
    case c10::ScalarType::BFloat16: return DeviceElement::bf16;
    case c10::ScalarType::Half: return DeviceElement::f16;
    default: throw std::invalid_argument(user + " takes no " + c10::toString(type) + " tensors");
  }
}

}  // namespace llmrdzv::kernel_support
