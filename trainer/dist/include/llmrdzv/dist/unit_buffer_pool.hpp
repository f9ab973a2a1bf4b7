// The memory behind ZeRO-3's whole-unit tensors (ShardedUnits' gathered parameters and their
// fp32 gradient buffers), kept for the next unit of the same size instead of going back to
// malloc, as FSDP2's reusable buffers are. The buffers come and go once per unit per pass; handed
// back to a heap that keeps freed memory (training's malloc settings) they leave holes a
// same-size buffer no longer fits: measured, the heap grew by about 1 GB per rank over a 124M
// model's first steps at 4 ranks. The tensors keep their shapes and storage objects; only the
// bytes move (kernel_support/tensor_storage.hpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmrdzv::dist {

class UnitBufferPool {
 public:
  // At most `per_size` buffers of one size are kept.
  explicit UnitBufferPool(std::ptrdiff_t per_size) : per_size_(per_size) {}

  // Gives a contiguous tensor that owns its whole storage its bytes (uninitialised): a kept
  // buffer of its size, else a new one; nothing when it has them already.
  void take(const at::Tensor& whole);
  // Takes the tensor's bytes away (it keeps its shape) and keeps them, unless per_size of that size
  // are kept already (then they are freed).
  void keep(const at::Tensor& whole);
  // The bytes kept now.
  std::int64_t kept_bytes() const;

 private:
  struct Kept {
    std::size_t bytes;
    at::DataPtr data;
  };
  std::ptrdiff_t per_size_;
  std::vector<Kept> kept_;
};

}  // namespace llmrdzv::dist
