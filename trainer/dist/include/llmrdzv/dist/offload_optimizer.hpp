// ZeRO-Offload-style AdamW: the fp32 master weights and both Adam moments live in host memory,
// sharded across ranks (each keeps 1/world of them); the device keeps only the parameters and
// their gradient, both in the parameters' type (bf16 in mixed precision: 4 bytes per parameter
// on the GPU instead of the 16 of AdamW there).
//
// The parameters become views into one flat buffer in GradientBuckets' layout, padded to whole
// shards. Each step takes this rank's slice of the synchronised flat gradient, updates its shard
// with the fused SIMD AdamW (llmrdzv::optim; for bf16 the variant that reads the bf16 gradient
// and writes the rounded bf16 weights in the same pass), writes the new values, rounded to the
// parameters' type on the host, into its slice of the flat parameters, and all-gathers the slices in place
// (nothing is gathered with one rank). The shard moves in chunks through two download and two
// upload staging buffers (chunk_pipeline.hpp), so on CUDA the gradient download and weight upload
// of neighbouring chunks overlap the host's update and each other (a copy stream per direction,
// events, pinned host buffers).
// With the device being the CPU the same chunked path runs, with synchronous copies.
//
// step_delayed() is ZeRO-Offload's one-step delayed parameter update (DPU): it takes the step's
// gradient to the host and returns while a background thread updates the shard, so the host's
// AdamW overlaps the device's next forward and backward, which run on weights one update behind.
// The gradient comes down in parts (chunks of the shard) into a host buffer; the background
// update takes each part as soon as it has landed and sends its new weights up at once (16-bit
// ones rounded in place of the gradient), into a device buffer beside the parameters (the
// shard's size in their type), so every copy runs while the device computes the next step. The next step_delayed() (or
// complete_update()) then applies the finished update with one copy on the device (and the
// all-gather): the device's next forward waits for no host transfer. Nor does it wait for the
// gradient's download, which the device must not overwrite until it has been read:
// before_gradient_write() orders that.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <array>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llmrdzv/dist/chunk_pipeline.hpp"
#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/engine/host_read.hpp"
#include "llmrdzv/optim/fused_adamw.hpp"

namespace llmrdzv::dist {

class OffloadCopies;  // offload_copies.hpp

struct OffloadParameter {
  at::Tensor tensor;
  bool decay = true;
};

class OffloadAdamW {
 public:
  // Elements per pipeline chunk when none is given: 4 MiB of floats.
  static constexpr std::int64_t kDefaultChunkElements = std::int64_t{1} << 20;

  // `slots` place each parameter in the flat gradient buffer (GradientBuckets::slots()). The
  // parameters (one float type, one device) are made views into the flat parameter buffer: their
  // values stay, their storage moves. `chunk_elements` (> 0) sets how much of the shard moves
  // through a staging buffer at once; the result does not depend on it, only the overlap and the
  // staging memory do.
  OffloadAdamW(std::vector<OffloadParameter> parameters, std::vector<FlatSlot> slots,
               c10::intrusive_ptr<c10d::Backend> backend, optim::AdamWHyperparams hyper,
               optim::KernelOptions kernel = {}, std::int64_t chunk_elements = kDefaultChunkElements);
  ~OffloadAdamW();
  OffloadAdamW(const OffloadAdamW&) = delete;
  OffloadAdamW& operator=(const OffloadAdamW&) = delete;

  // One AdamW step at `learning_rate` from the mean gradient `flat_grad` (of the parameters'
  // type, on their device), scaled by `grad_scale` (gradient clipping); then the parameters hold
  // the new weights on every rank.
  // A delayed update still pending is applied first.
  void step(const at::Tensor& flat_grad, double learning_rate, double grad_scale);

  // The same update, delayed by one step: applies the pending update (if any) to the parameters,
  // starts moving `flat_grad`'s shard to the host and returns; a background thread then updates
  // the master weights from it. The parameters keep their current values until the next
  // step_delayed() or complete_update() (which every rank calls at the same step). A sequence of
  // calls ends in the master weights and moments step() would reach from the same gradients.
  // Host memory: a shard-sized buffer of the parameters' type, which carries the gradient down and
  // (bf16/fp16) the rounded new weights up; fp32 weights go up from the master weights. Device
  // memory: one shard-sized buffer of the parameters' type, where the new weights wait. The
  // device must not free or reuse `flat_grad` before before_gradient_write() (the download reads
  // it meanwhile).
  // `grad_scale` is one element, on any device: the background update reads it (its copy to the
  // host is queued here), so nothing here waits for the device to finish the step.
  void step_delayed(const at::Tensor& flat_grad, double learning_rate, const at::Tensor& grad_scale);
  // Before the device next writes the flat gradient: device work queued from now on (on the
  // current stream) waits until step_delayed()'s download has read it. Nothing to wait for after
  // step(), which returns with its downloads done.
  void before_gradient_write();

  // Waits for the pending delayed update and applies it to the parameters; nothing when none is.
  void complete_update();
  bool update_pending() const { return pending_.valid(); }

  // This rank's shard and what a resume needs to check it: layout, world size, rank, step.
  // Neither may be called while a delayed update is pending (std::logic_error).
  std::map<std::string, at::Tensor> state() const;
  // Restores state() of the same model at the same world size and rank. Or reshards: given
  // "offload.shards" = W and every rank k's state() under "shard.<k>/" names, from a run with W
  // ranks, this rank takes its part of their concatenation (any world size, same model).
  // Throws std::runtime_error naming the problem (one rank's file at another world size, another
  // model, shards of different steps, a missing entry).
  void load_state(const std::map<std::string, at::Tensor>& state);

  // Host bytes this rank holds for the optimizer: master weights, two moments and the staging
  // buffers (one chunk each, or the owned shard when that is smaller; step_delayed()'s buffer of
  // the owned shard once it ran).
  std::size_t state_bytes() const;
  std::int64_t shard_begin() const { return shard_begin_; }
  std::int64_t shard_size() const { return shard_size_; }
  std::int64_t steps_taken() const { return step_; }
  std::int64_t chunk_elements() const { return chunk_; }
  // Seconds the last step() spent waiting for the all-gather of the shards.
  double last_gather_wait_seconds() const { return last_gather_wait_seconds_; }
  // The last step()'s pipeline: its chunks, and how many of their gradient downloads had already
  // landed (CUDA events) when the host came to update them, i.e. ran during the host's update
  // of the chunk before. 0 on the CPU, where copies are synchronous. Only step() makes them: after
  // a step_delayed() since, they count nothing meaningful.
  struct PipelineStats {
    std::int64_t chunks = 0;
    std::int64_t downloads_landed_before_wait = 0;
  };
  PipelineStats last_pipeline_stats() const;

 private:
  void load_resharded(const std::map<std::string, at::Tensor>& state);
  // AdamW on shard elements [begin, end) from their gradient in `grad` (end - begin values of the
  // parameters' type). For bf16 it also writes the new weights, rounded, to `rounded` (end - begin
  // bf16 values; it may be `grad` itself) in the same pass (optim::adamw_step_bf16).
  void update_range(std::int64_t begin, std::int64_t end, const at::Tensor& grad, double learning_rate,
                    double grad_scale, const optim::KernelOptions& kernel, const at::Tensor& rounded = {});
  // Starts moving the updated master weights [begin, end) of the shard into the flat parameters
  // (bf16: from upload_[buffer], where update_range rounded them).
  void start_upload(std::int64_t begin, std::int64_t end, int buffer);
  // bf16 weights: update_range rounds them itself (no separate widening and rounding passes).
  bool rounds_in_update() const { return type_ == at::kBFloat16; }
  void all_gather();
  void check_gradient(const at::Tensor& flat_grad) const;
  void refuse_if_pending(const char* what) const;
  // The shard ranges a delayed update moves and updates in turn (chunks); part p's copies carry
  // mark p.
  std::vector<ChunkRange> delayed_parts() const;
  // The background half of step_delayed(): part by part, waits for its gradient to land (and,
  // fp32, for the last weights uploaded from its masters to have left), updates it, (bf16/fp16)
  // rounds its new weights into delayed_ in place of the gradient, and starts their upload into
  // arrived_.
  void update_delayed(const std::vector<ChunkRange>& parts, double learning_rate, engine::HostRead& scale);
  // After a delayed update finished: the device copies its weights from arrived_ into the
  // parameters (after waiting for their uploads), and the ranks gather them.
  void apply_arrived();

  struct Run {  // a stretch of the shard with one weight-decay setting
    std::int64_t begin = 0, end = 0;  // relative to the shard
    bool decay = true;
  };

  std::vector<OffloadParameter> parameters_;
  std::vector<FlatSlot> slots_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  optim::AdamWHyperparams hyper_;
  optim::KernelOptions kernel_;
  int rank_ = 0, world_ = 1;
  std::int64_t total_ = 0;        // parameters in the flat layout
  std::int64_t shard_size_ = 0;   // ceil(total / world): every rank's shard, last one padded
  std::int64_t shard_begin_ = 0;  // rank * shard_size
  std::int64_t owned_ = 0;        // real (unpadded) elements of this rank's shard
  std::int64_t chunk_ = 0;        // elements per pipeline chunk
  std::vector<Run> runs_;
  at::ScalarType type_ = at::kFloat;          // the parameters' (and their gradient's) type
  at::Tensor flat_params_;                     // world * shard_size_ of type_, on the device
  at::Tensor master_, exp_avg_, exp_avg_sq_;  // shard_size_ floats each, host
  std::array<at::Tensor, 2> download_;         // host gradient chunks of type_, min(chunk, owned) each
  std::array<at::Tensor, 2> upload_;           // host rounded-weight chunks of type_ (none for fp32)
  at::Tensor gradient32_;                      // one fp32 host chunk (fp16 only)
  // step_delayed()'s owned_ host values of type_, made at its first call: the gradient, then (not
  // fp32) the rounded new weights.
  at::Tensor delayed_;
  at::Tensor arrived_;  // owned_ values of type_ on the device: a delayed update's uploaded weights
  std::future<void> pending_;                  // the background update of step_delayed()
  std::unique_ptr<OffloadCopies> copies_;
  bool pinned_ = false;                        // host buffers are pinned (the device is a GPU)
  std::int64_t step_ = 0;
  double last_gather_wait_seconds_ = 0;
};

}  // namespace llmrdzv::dist
