// UnitBufferPool: a few whole-unit buffers per size, kept between uses (unit_buffer_pool.hpp).
#include "llmrdzv/dist/unit_buffer_pool.hpp"

#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <utility>

#include "llmrdzv/kernel_support/tensor_storage.hpp"

namespace llmrdzv::dist {

void UnitBufferPool::take(const at::Tensor& whole) {
  c10::StorageImpl* storage = whole.storage().unsafeGetStorageImpl();
  const std::size_t bytes = static_cast<std::size_t>(whole.numel()) * whole.element_size();
  const auto kept = std::find_if(kept_.begin(), kept_.end(), [&](const Kept& b) { return b.bytes == bytes; });
  if (storage->nbytes() == bytes || kept == kept_.end()) return kernel_support::allocate_storage(whole);
  storage->set_data_ptr_noswap(std::move(kept->data));
  storage->set_nbytes(bytes);
  kept_.erase(kept);
}

void UnitBufferPool::keep(const at::Tensor& whole) {
  c10::StorageImpl* storage = whole.storage().unsafeGetStorageImpl();
  const std::size_t bytes = storage->nbytes();
  if (bytes == 0) return;
  at::DataPtr data = storage->set_data_ptr(at::DataPtr(nullptr, whole.device()));
  storage->set_nbytes(0);
  const auto same = std::count_if(kept_.begin(), kept_.end(), [&](const Kept& b) { return b.bytes == bytes; });
  if (same < per_size_) kept_.push_back({bytes, std::move(data)});
}

std::int64_t UnitBufferPool::kept_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& b : kept_) bytes += static_cast<std::int64_t>(b.bytes);
  return bytes;
}

}  // namespace llmrdzv::dist
