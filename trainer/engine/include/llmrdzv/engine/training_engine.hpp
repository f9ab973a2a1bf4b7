// The seam between the training loop and data parallelism. The loop does forward, loss and
// backward; everything that depends on how many processes train together goes through this
// interface: rank and world (sampler sharding, rank-0-only logging and saving), the device,
// gradient synchronisation, clipping of the global gradient, the optimizer step (plain or with
// its state offloaded to the CPU), reductions of logged numbers, and optimizer state for
// checkpoints. make_single_process_engine (single_process_engine.hpp) is the one-process
// implementation; trainer/dist's distributed engine implements the same interface. It lives in
// trainer/engine so that the loop (trainer/train) and trainer/dist both depend on it and not on
// each other.
//
// Call order per optimizer step, as the loop makes it (with parameter_units(): the model calls
// them during forward and backward):
//   for each micro-batch m of G:  begin_micro_step(m == G-1); forward; (loss * S / G).backward();
//   norm = finish_gradients(max_grad_norm, 1 / S);  optimizer_step(lr)  (or skip_step())
// and complete_updates() before an evaluation, a checkpoint and the end of training.
// where S is fp16's loss scale (1 otherwise). Parameters may be bf16 or fp16 (mixed precision):
// engines then keep fp32 master weights (master_weights.hpp), accumulate gradients in fp32 and
// round the updated masters back into the parameters after each step.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmrdzv/engine/host_read.hpp"

namespace llmrdzv::engine {

// A trainable parameter under its HF name. `decay` is false for biases and LayerNorm weights,
// which AdamW leaves undecayed. `unit`: the model's parameter unit it belongs to (0 outside the
// blocks, i + 1 in block i), which an engine sharding parameters gathers and frees as one.
struct NamedParameter {
  std::string name;
  at::Tensor tensor;
  bool decay = true;
  int unit = 0;
};

// What a model calls around its parameter units when the engine shards parameters (ZeRO-3):
// the engine gathers a unit's parameters before it is used and frees them after (the model's
// UnitHooks, which the loop connects to these).
class ParameterUnits {
 public:
  virtual ~ParameterUnits() = default;
  virtual void before_forward(int unit) = 0;
  virtual void after_forward(int unit) = 0;
  virtual void before_backward(int unit) = 0;
  // Every unit gathered into the parameters until the next micro-step or read_unit_of(): for
  // writing weights into the whole model (loading the best checkpoint's at the end).
  virtual void gather_whole() = 0;
  // Reading the model one parameter at a time (checkpoints, the export): gathers the unit
  // `parameter` belongs to and frees the one read before. Values written into a whole model
  // gathered before (loaded weights) become the shards first, though not the optimizer's fp32
  // masters (weights are loaded after the last step). Every rank makes the same calls in order.
  virtual void read_unit_of(const at::Tensor& parameter) = 0;
};

// The parameters' values for a model built without them (model::WeightInit::deferred), so that
// an engine sharding parameters (ZeRO-3) materialises the model one unit at a time and no rank
// ever holds all of it. `fill(i, values)` writes parameter i's values (attach's order) into
// `values`, an fp32 tensor of its shape on the CPU; every rank calls it for every parameter in
// model order (where the values are drawn from the RNG every rank draws the same), and rank 0's
// values become every rank's. `dtype`: the type the parameters train in.
struct DeferredValues {
  std::function<void(std::size_t index, const at::Tensor& values)> fill;
  at::ScalarType dtype = at::kFloat;
};

struct AdamWSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.0;
};

using TensorMap = std::map<std::string, at::Tensor>;

// The norm of a step's global gradient, as finish_gradients() returns it: either already a host
// number, or a scalar tensor still being computed on a GPU, read the first time value() is asked
// for. So a loop that reads it only at logging steps (or for fp16's overflow check) does not make
// the host wait for every step's backward.
class GradientNorm {
 public:
  GradientNorm(double value) : read_(value) {}  // NOLINT(google-explicit-constructor): a norm is a number
  explicit GradientNorm(at::Tensor value) : unread_(std::move(value)) {}
  double value() const {
    if (!read_) read_ = reading_ ? reading_->value() : unread_.item<double>();
    return *read_;
  }
  // Starts copying the norm to the host without waiting (host_read.hpp); value() then waits for
  // that copy only, not for the work queued after it.
  void start_read() {
    if (!read_ && !reading_) reading_ = std::make_shared<HostRead>(unread_);
  }

 private:
  mutable std::optional<double> read_;
  at::Tensor unread_;
  std::shared_ptr<HostRead> reading_;  // shared: a norm is copied like a number
};

// Optimizer state sharded over ranks, across a change of world size. An engine whose saved state
// is this rank's shard marks it with its `layout` entry; resuming with another number of ranks, the
// checkpoint loader hands it every old rank's entries as "shard.<k>/<name>" and the number of old
// ranks under `count`, and the engine cuts its new shard out of them.
struct ShardedStateKeys {
  const char* layout;
  const char* count;
};
// --offload optimizer's host shards; --shard_parameters' (ZeRO-3) shards.
inline constexpr ShardedStateKeys kOffloadShardKeys{"offload.layout", "offload.shards"};
inline constexpr ShardedStateKeys kParameterShardKeys{"shard_parameters.world_size", "shard_parameters.shards"};

class TrainingEngine {
 public:
  virtual ~TrainingEngine() = default;

  // This process's rank and the number of ranks. Rank 0 alone logs and writes shared files.
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  bool is_main() const { return rank() == 0; }

  // Where the model and the batches live (the CPU, or this rank's GPU).
  virtual c10::Device device() const = 0;

  // Once, with the model already on device() and before any step (and before a checkpoint's
  // optimizer state is loaded): make the parameters identical on all ranks and set the
  // optimizer up over them. `parameters` is in the model's order, the same on every rank.
  virtual void attach(std::vector<NamedParameter> parameters, const AdamWSettings& settings) = 0;
  // attach() for a model built without values (DeferredValues): only an engine sharding the
  // parameters takes one (the others throw std::logic_error; they hold the whole model anyway).
  virtual void attach_deferred(std::vector<NamedParameter> /*parameters*/, const AdamWSettings& /*settings*/,
                               const DeferredValues& /*values*/) {
    throw std::logic_error("a model built without its values needs an engine that shards the parameters");
  }

  // Before each micro-batch's backward. Only the last micro-batch of an accumulation
  // (`last_micro_step`) needs its gradients synchronised.
  virtual void begin_micro_step(bool last_micro_step) = 0;

  // After the last micro-batch's backward: complete gradient synchronisation, multiply the
  // gradient by `gradient_multiplier` (undoing a loss scale), then clip the norm of the whole
  // (global) gradient to max_norm (0 = no clipping): the next optimizer_step() uses the gradient
  // times min(1, max_norm / (norm + 1e-6)), as torch's clip_grad_norm_ leaves it. Where the
  // optimizer can apply that factor as it reads the gradient (the CPU kernel, the offload shards),
  // the gradient tensors are left unscaled. Returns the norm before clipping, the same on every
  // rank; not finite when a gradient overflowed. On a GPU it may be returned unread.
  virtual GradientNorm finish_gradients(double max_norm, double gradient_multiplier = 1.0) = 0;

  // One AdamW update of every parameter at `learning_rate`, then the gradients are zeroed.
  virtual void optimizer_step(double learning_rate) = 0;
  // Instead of optimizer_step, for a step whose gradients overflowed: the gradients are dropped.
  virtual void skip_step() = 0;

  // With parameters sharded (--shard_parameters): the calls the model must make around its units,
  // owned by the engine; nullptr when every rank holds the whole model.
  virtual ParameterUnits* parameter_units() { return nullptr; }

  // Applies an update optimizer_step() left in flight (--offload_delayed_update) to the
  // parameters, on every rank. The loop calls it before it evaluates, saves or hands the model
  // on, so those see the weights of every step taken, and a run resumed from a checkpoint
  // continues exactly as the uninterrupted one, which completed its update at the same step.
  // With parameters sharded, whatever reads the whole model asks parameter_units() for it.
  virtual void complete_updates() {}

  // Element-wise sum over all ranks (loss sums, token counts). With one rank: the input.
  virtual std::vector<double> all_reduce_sum(std::vector<double> values) = 0;

  // Blocks until every rank has called it.
  virtual void barrier() = 0;

  // Running total of the seconds this rank has spent blocked in collectives since it was made:
  // communication that computation did not hide (the gradient all-reduces still pending after
  // backward, the offload all-gather, all_reduce_sum, barrier), including waiting there for slower
  // ranks. The loop logs its growth per step. One process never waits: 0. (On CUDA this is host
  // time: NCCL's wait only orders the streams, so it undercounts there.)
  virtual double comm_wait_seconds() const { return 0; }

  // This rank's optimizer state, as tensors under names the engine chooses (saved per rank).
  virtual TensorMap optimizer_state() const = 0;
  // Restores what optimizer_state() returned in an earlier run of the same shape; throws
  // std::runtime_error naming the problem (missing entry, wrong shape, other world size).
  virtual void load_optimizer_state(const TensorMap& state) = 0;
};

}  // namespace llmrdzv::engine
