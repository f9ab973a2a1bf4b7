// host_read.hpp: a non-blocking copy into pinned host memory and an event on the device's current
// stream, through c10's device-generic interfaces (no CUDA headers).
#include "llmrdzv/engine/host_read.hpp"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <stdexcept>

namespace llmrdzv::engine {

HostRead::HostRead(const at::Tensor& value) {
  if (value.numel() != 1) throw std::invalid_argument("HostRead takes a one-element tensor");
  const at::Tensor v = value.detach().reshape({1}).to(at::kDouble);
  if (v.is_cpu()) {
    read_ = v.item<double>();
    return;
  }
  device_ = v.device();
  host_ = at::empty({1}, at::TensorOptions().dtype(at::kDouble).pinned_memory(true));
  host_.copy_(v, /*non_blocking=*/true);
  copied_.emplace(v.device().type());
  copied_->record(c10::impl::VirtualGuardImpl(v.device().type()).getStream(v.device()));
}

double HostRead::value() {
  if (!read_) {
    const c10::OptionalDeviceGuard on_device(device_);
    copied_->synchronize();
    read_ = host_.data_ptr<double>()[0];
  }
  return *read_;
}

}  // namespace llmrdzv::engine
