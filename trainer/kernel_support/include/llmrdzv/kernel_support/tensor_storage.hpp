// A tensor's bytes let go and given back while its shape and its storage object stay: what ZeRO-3
// does with a unit's parameters between uses (dist's ShardedUnits), and what a model built without
// its values does with each parameter until the engine fills it a unit at a time
// (model::WeightInit::deferred). Every view of the storage (a module's parameter, a tensor autograd
// saved for backward) keeps its shape; nothing may read it until allocate_storage() gave the bytes
// back. The version counters do not move, so autograd's saved tensors stay valid across the swap.
// For translation units that already have torch.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/StorageImpl.h>

#include <cstddef>

namespace llmrdzv::kernel_support {

inline void release_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
}

// Gives a contiguous tensor that owns its whole storage its bytes back (uninitialised), unless it
// has them.
inline void allocate_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  const std::size_t bytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  if (storage->nbytes() == bytes) return;
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

}  // namespace llmrdzv::kernel_support
