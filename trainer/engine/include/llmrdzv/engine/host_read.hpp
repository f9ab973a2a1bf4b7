// A number a GPU is still computing, read on the host later without waiting for the work queued
// after it: the copy to pinned host memory is queued behind the number's own work, with an event
// after it, and reading waits for that event only. The training loop starts such reads for a
// logging step's loss and gradient norm and finishes them once the next step's forward and
// backward are queued, so that the GPU never idles while the host logs. A number on the CPU is
// read at once.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <optional>

namespace llmrdzv::engine {

class HostRead {
 public:
  // Starts reading `value` (one element, any floating type), as fp64.
  explicit HostRead(const at::Tensor& value);

  // The value; the first call waits for the copy. Any thread may call it: it waits on the value's
  // own device (a thread that never chose one would otherwise touch the first).
  double value();

 private:
  std::optional<c10::Device> device_;
  at::Tensor host_;
  std::optional<c10::Event> copied_;
  std::optional<double> read_;
};

}  // namespace llmrdzv::engine
