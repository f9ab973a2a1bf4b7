// ZeRO-Offload-style AdamW: the fp32 master weights and both Adam moments live in host memory,
// sharded across ranks (each keeps 1/world of them). Each step takes this rank's slice of the
// synchronised flat gradient (GradientBuckets' layout), updates its shard with the fused SIMD
// AdamW (llmrdzv::optim), all-gathers the shards and writes the new values into the model's
// parameters (CPU or GPU, any float type). With the device being the CPU the whole path runs
// here; on CUDA the host buffers are pinned.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/optim/fused_adamw.hpp"

namespace llmrdzv::dist {

struct OffloadParameter {
  at::Tensor tensor;
  bool decay = true;
};

class OffloadAdamW {
 public:
  // `slots` place each parameter in the flat gradient buffer (GradientBuckets::slots()).
  OffloadAdamW(std::vector<OffloadParameter> parameters, std::vector<FlatSlot> slots,
               c10::intrusive_ptr<c10d::Backend> backend, optim::AdamWHyperparams hyper,
               optim::KernelOptions kernel = {});

  // One AdamW step at `learning_rate` from the mean gradient `flat_grad`, scaled by
  // `grad_scale` (gradient clipping); then the parameters hold the new weights on every rank.
  void step(const at::Tensor& flat_grad, double learning_rate, double grad_scale);

  // This rank's shard and what a resume needs to check it: layout, world size, rank, step.
  std::map<std::string, at::Tensor> state() const;
  // Restores state() of the same model at the same world size and rank. Or reshards: given
  // "offload.shards" = W and every rank k's state() under "shard.<k>/" names, from a run with W
  // ranks, this rank takes its part of their concatenation (any world size, same model).
  // Throws std::runtime_error naming the problem (one rank's file at another world size, another
  // model, shards of different steps, a missing entry).
  void load_state(const std::map<std::string, at::Tensor>& state);

  // Host bytes this rank holds for the optimizer: master weights, two moments, gradient shard.
  std::size_t state_bytes() const;
  std::int64_t shard_begin() const { return shard_begin_; }
  std::int64_t shard_size() const { return shard_size_; }
  std::int64_t steps_taken() const { return step_; }

 private:
  void load_resharded(const std::map<std::string, at::Tensor>& state);

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
  std::vector<Run> runs_;
  at::Tensor master_, exp_avg_, exp_avg_sq_;  // shard_size_ floats each, host
  at::Tensor grad_shard_;                      // host copy of this rank's gradient slice
  at::Tensor gathered_;                        // world * shard_size_ floats, on the device
  std::int64_t step_ = 0;
};

}  // namespace llmrdzv::dist
