// Data-parallel gradient synchronisation, as DDP does it (LibTorch C++ has no DDP module):
// the buffer is fp32 whatever the parameters' type (bf16/fp16 gradients are summed in fp32),
// unless a sharded offload asks for one in the parameters' own type (GradientBufferOptions);
// parameters are grouped into buckets of a configurable size in reverse model order (backward
// produces the last layers' gradients first); a post-accumulate-grad hook on every parameter
// copies its gradient into the bucket's slice of one flat buffer, and when a bucket is complete
// its all-reduce is launched at once, so communication overlaps the rest of backward. Buckets
// are launched in index order on every rank, so collectives match. Only the last micro-step of
// a gradient accumulation is synchronised.
//
// For a sharded optimizer (ZeRO) every rank needs only the mean gradient of its own shard:
// reduce_to_owners() makes each bucket a reduce of each shard's part to the rank that owns it
// (ZeRO-2's reduce-scatter, at any bucket boundary), half an all-reduce's traffic; elsewhere the
// flat buffer is then left undefined.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace llmrdzv::dist {

// Where one parameter's gradient lives in the flat buffer.
struct FlatSlot {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
};

// Contiguous shards of a flat buffer of `total` elements, one per rank: rank r owns
// [r * size, min(total, (r + 1) * size)) with size = ceil(total / world) (the last one padded).
struct ShardLayout {
  std::int64_t total = 0;
  std::int64_t size = 0;
  int world = 1;
  static ShardLayout of(std::int64_t total, int world);
  std::int64_t begin(int rank) const { return std::min(total, std::int64_t{rank} * size); }
  std::int64_t end(int rank) const { return std::min(total, (std::int64_t{rank} + 1) * size); }
};

// How the flat buffer is kept. The default is DDP's for mixed precision: an fp32 buffer, the
// parameters' own gradients kept until the step ends. ZeRO-Offload's GPU keeps only the
// parameters' type: a buffer of that type, into which every gradient moves as soon as autograd
// has accumulated it (on every micro-step; it then accumulates in that type), the parameter's own
// gradient released at once, so the device holds one gradient's worth, not two.
struct GradientBufferOptions {
  at::ScalarType type = at::kFloat;
  bool release_parameter_gradients = false;
};

class GradientBuckets {
 public:
  // `parameters` in model order (the same on every rank). Buckets hold up to bucket_cap_bytes of
  // gradients (at least one parameter each).
  GradientBuckets(std::vector<at::Tensor> parameters, c10::intrusive_ptr<c10d::Backend> backend,
                  std::size_t bucket_cap_bytes, GradientBufferOptions buffer = {});
  ~GradientBuckets();  // removes the hooks
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // From now on each rank receives only its shard of the mean gradient (see the header).
  void reduce_to_owners();
  bool reduces_to_owners() const { return owners_.has_value(); }
  // The shards reduce_to_owners() uses (those of the flat buffer at this world size).
  ShardLayout shards() const;

  // Before each micro-batch's backward: hooks act only when `last_micro_step`.
  void begin_micro_step(bool last_micro_step);
  // After the last backward: launches the buckets not launched yet (parameters that got no
  // gradient count as zero), waits for all, and leaves the mean gradient over ranks in flat()
  // (with reduce_to_owners: in this rank's shard of it).
  void finish();
  // Writes flat()'s mean gradients back into every parameter's .grad.
  void copy_to_grads();
  // The same into the .grad of `tensors` (one per parameter, same shapes; e.g. fp32 master
  // weights, which then receive the fp32 mean rather than one rounded to the parameters' type).
  void copy_to_grads_of(const std::vector<at::Tensor>& tensors);

  // For bf16/fp16 parameters, before each micro-batch's backward: moves the gradients autograd
  // accumulated so far into the fp32 buffer and drops them from the parameters, so gradients
  // accumulate over micro-batches in fp32 (the last micro-batch's hooks add to what was folded).
  void fold();

  const at::Tensor& flat() const { return flat_; }  // defined from the first micro-step on
  const std::vector<FlatSlot>& slots() const { return slots_; }  // per parameter, model order
  std::size_t bucket_count() const { return buckets_.size(); }
  // How many buckets the hooks launched during the last backward (the rest waited for finish()).
  std::size_t launched_during_backward() const { return launched_by_hooks_; }
  // Seconds finish() spent waiting for communication that backward did not hide.
  double last_wait_seconds() const { return last_wait_seconds_; }

  // `barrier` runs once per step, before that step's first write into the flat buffer (on the
  // thread and CUDA stream that write: during backward, in a gradient hook). An offloading
  // optimizer whose copy of the last gradient to the host may still be reading the buffer makes
  // the device wait there, so the next forward need not.
  void set_write_barrier(std::function<void()> barrier);

  // Called by the hook of parameter `index` (public for the hook type only).
  void on_gradient_ready(std::size_t index, const at::Tensor& grad);

 private:
  struct Bucket {
    std::int64_t begin = 0, end = 0;  // range of flat_
    std::vector<std::size_t> parameters{};
    std::size_t ready = 0;
    std::vector<c10::intrusive_ptr<c10d::Work>> work{};  // one all-reduce, or a reduce per owner
  };

  void launch_ready_in_order();  // with mutex_ held
  void launch(Bucket& bucket);
  void add_to_flat(std::size_t index, const at::Tensor& grad);  // with mutex_ held
  void before_write();  // with mutex_ held: the step's write barrier, if it has not run yet
  // The flat buffer is made at its first use (the first micro-step), not with the buckets: an
  // offloading engine first moves the parameters into their own flat buffer, and the device
  // never holds the old parameters, their new buffer and the gradients at once.
  void ensure_buffer();  // with mutex_ held

  std::vector<at::Tensor> parameters_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  at::Tensor flat_;
  std::int64_t total_ = 0;  // elements of flat_
  at::TensorOptions buffer_options_;
  std::vector<FlatSlot> slots_;
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<bool> ready_;              // per parameter, this step
  std::vector<bool> folded_;             // per parameter: fold() put some of this step's gradient in flat_
  std::vector<Bucket> buckets_;
  std::size_t next_to_launch_ = 0;
  std::size_t launched_by_hooks_ = 0;
  std::optional<ShardLayout> owners_;
  bool release_ = false;  // GradientBufferOptions::release_parameter_gradients
  bool armed_ = false;
  std::function<void()> write_barrier_;
  bool barrier_due_ = true;  // this step's writes have not begun
  double last_wait_seconds_ = 0;
  std::mutex mutex_;
};

}  // namespace llmrdzv::dist
