// Data-parallel gradient synchronisation, as DDP does it (LibTorch C++ has no DDP module):
// parameters are grouped into buckets of a configurable size in reverse model order (backward
// produces the last layers' gradients first); a post-accumulate-grad hook on every parameter
// copies its gradient into the bucket's slice of one flat buffer, and when a bucket is complete
// its all-reduce is launched at once, so communication overlaps the rest of backward. Buckets
// are launched in index order on every rank, so collectives match. Only the last micro-step of
// a gradient accumulation is synchronised.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace llmrdzv::dist {

// Where one parameter's gradient lives in the flat buffer.
struct FlatSlot {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
};

class GradientBuckets {
 public:
  // `parameters` in model order (the same on every rank). Buckets hold up to bucket_cap_bytes of
  // gradients (at least one parameter each).
  GradientBuckets(std::vector<at::Tensor> parameters, c10::intrusive_ptr<c10d::Backend> backend,
                  std::size_t bucket_cap_bytes);
  ~GradientBuckets();  // removes the hooks
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before each micro-batch's backward: hooks act only when `last_micro_step`.
  void begin_micro_step(bool last_micro_step);
  // After the last backward: launches the buckets not launched yet (parameters that got no
  // gradient count as zero), waits for all, and leaves the mean gradient over ranks in flat().
  void finish();
  // Writes flat()'s mean gradients back into every parameter's .grad.
  void copy_to_grads();

  const at::Tensor& flat() const { return flat_; }
  const std::vector<FlatSlot>& slots() const { return slots_; }  // per parameter, model order
  std::size_t bucket_count() const { return buckets_.size(); }
  // How many buckets the hooks launched during the last backward (the rest waited for finish()).
  std::size_t launched_during_backward() const { return launched_by_hooks_; }
  // Seconds finish() spent waiting for communication that backward did not hide.
  double last_wait_seconds() const { return last_wait_seconds_; }

  // Called by the hook of parameter `index` (public for the hook type only).
  void on_gradient_ready(std::size_t index, const at::Tensor& grad);

 private:
  struct Bucket {
    std::int64_t begin = 0, end = 0;  // range of flat_
    std::vector<std::size_t> parameters{};
    std::size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work{};
  };

  void launch_ready_in_order();  // with mutex_ held
  void launch(Bucket& bucket);

  std::vector<at::Tensor> parameters_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  at::Tensor flat_;
  std::vector<FlatSlot> slots_;
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<bool> ready_;              // per parameter, this step
  std::vector<Bucket> buckets_;
  std::size_t next_to_launch_ = 0;
  std::size_t launched_by_hooks_ = 0;
  bool armed_ = false;
  double last_wait_seconds_ = 0;
  std::mutex mutex_;
};

}  // namespace llmrdzv::dist
