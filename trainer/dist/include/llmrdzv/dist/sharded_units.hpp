// ZeRO-3's sharding of parameters and gradients (--shard_parameters), as FSDP2 and DeepSpeed
// stage 3 do it: every parameter unit of the model (a block; everything outside the blocks is
// unit 0) is one flat buffer split into N equal shards (the last padded with zeros), and each rank
// keeps only its own shard of the parameters, of the accumulated gradient and of the optimizer
// state. The model's parameter tensors stay what the model reads, but their storage is the
// unit's whole buffer, which the unit holds only while it computes (the memory itself goes to the
// next unit of its size, as FSDP2's reusable buffers do):
//   - before_forward(u) all-gathers u's shards into it (waiting for a prefetch already started)
//     and starts gathering the next block's, so communication overlaps the current block;
//   - after_forward(u) frees it (unit 0 at the end of an evaluation's pass; in training it stays
//     until its gradient is reduced, as the LM head's backward comes first);
//   - before_backward(b) gathers block b again (and prefetches block b - 1) before its backward
//     or its recomputation under activation checkpointing;
//   - when autograd brings a unit's first gradient (a tensor hook on each parameter), the unit's
//     parameters get their .grad as views of one zeroed fp32 buffer, the unit's flat gradient,
//     and autograd adds every gradient into it in place; once each has come (post-accumulate-grad
//     hooks) the buffer's reduction (the mean over ranks, in place) starts and runs while the
//     next block's backward computes (one in flight: the next one's start, the same unit's next
//     gradient, or the end of backward waits for it and adds this rank's shard of it to the fp32
//     gradient shard); the unit's parameters go at once, its buffer when the reduction is done. No rank ever holds all gradients. (The tied LM
//     head's gradient, and the embeddings' as autograd makes it, exist beside unit 0's buffer
//     until the embeddings' backward adds them in.)
// The optimizer (the one-process engine's fused AdamW, on fp32 masters where the parameters are
// bf16/fp16) updates only the shards; read_unit_of() lets checkpoints and the export read the model
// unit by unit, and gather_whole() puts all of it into the parameters for loading weights.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/dist/unit_buffer_pool.hpp"
#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::dist {

// Bytes this rank holds, read from the storages alive (not computed from shapes).
struct ShardResidency {
  std::int64_t shard_bytes = 0;           // parameter shards, their fp32 gradient shards
  std::int64_t whole_model_bytes = 0;     // every parameter of the model, in its type
  std::int64_t gathered_bytes = 0;        // whole-unit parameter storages alive now, the buffers
                                          // kept for the next unit's included
  std::int64_t peak_gathered_bytes = 0;   // most of those alive at once since reset_peaks()
  std::int64_t peak_gradient_bytes = 0;   // most whole-unit fp32 gradient buffers alive at once
                                          // (unit 0's waits for the embeddings' gradient while a
                                          // block's fills and the one before is reduced), kept
                                          // ones included
  std::int64_t largest_unit_bytes = 0;    // the largest unit's parameters, in their type
  std::int64_t outer_unit_bytes = 0;      // unit 0's
};

// How a unit's flat buffer is laid out: its decayed parameters' elements first, then the rest, then
// padding to shard * world. The same on every rank and for every world size.
struct UnitLayout {
  std::int64_t numel = 0;
  std::int64_t decay_numel = 0;
};

// The optimizer's name for a rank's piece of unit `unit`'s decayed or other part ("unit3.decay").
std::string shard_part_name(int unit, bool decay);

// The piece [from, to) of a part spanning [lo, hi) of a unit's flat buffer that the rank holding
// [rank * shard, (rank + 1) * shard) keeps; empty (from == to) when they do not meet.
struct PiecePlace {
  std::int64_t from = 0, to = 0;
};
PiecePlace shard_piece(std::int64_t lo, std::int64_t hi, std::int64_t shard, std::int64_t rank);
// Elements per shard of a unit of `numel` elements over `world` ranks.
inline std::int64_t shard_numel(std::int64_t numel, std::int64_t world) { return (numel + world - 1) / world; }

class ShardedUnits final : public engine::ParameterUnits {
 public:
  // `parameters` in the model's order with their units (1..L consecutive blocks, 0 the rest),
  // already equal on every rank. Takes over their storage: from here on each parameter's data
  // lives in its unit's buffer, released until gathered. Throws std::invalid_argument for mixed
  // dtypes or devices, or units that are not 0..L. `before_failing` is called when a collective
  // fails (a peer died), before the error goes on: these run inside the model's forward and
  // autograd's backward, outside the engine's calls, and the engine's failure watch must get its
  // chance to act on rdzvd's verdict (an elastic restart, or exit 3) there too.
  // With `deferred` the parameters have shapes but no values (model::WeightInit::deferred): the
  // units take DeferredValues' dtype, and each is filled (in model order), broadcast from rank 0
  // and cut into shards before the next block's values exist, so no rank ever holds more than
  // unit 0 and one block of them.
  ShardedUnits(const std::vector<engine::NamedParameter>& parameters, c10::intrusive_ptr<c10d::Backend> backend,
               std::function<void()> before_failing = {}, const engine::DeferredValues* deferred = nullptr);
  ~ShardedUnits() override;
  ShardedUnits(const ShardedUnits&) = delete;
  ShardedUnits& operator=(const ShardedUnits&) = delete;

  void before_forward(int unit) override;
  void after_forward(int unit) override;
  void before_backward(int unit) override;

  // This rank's parameter shards as the optimizer sees them: per unit, the part of its shard that
  // AdamW decays and the part it does not ("unit<k>.decay", "unit<k>.no_decay"; an empty part is
  // left out), views of the shard in the parameters' type.
  const std::vector<engine::NamedParameter>& shard_parameters() const { return shard_parameters_; }
  // The accumulated fp32 gradient of each shard_parameters() entry, in the same order.
  const std::vector<at::Tensor>& shard_gradients() const { return shard_gradients_; }

  // After the last micro-batch's backward: reduces the units autograd gave only some of their
  // gradients (all ranks alike, in unit order), so every shard gradient is complete.
  void finish_backward();
  // Sum of squares of this rank's gradient shards, in double.
  double local_gradient_square_sum() const;
  void zero_gradients();

  // Gathers every unit into the parameters and keeps them (loading weights into the model), until
  // release_all() or read_unit_of().
  void gather_whole() override;
  void read_unit_of(const at::Tensor& parameter) override;
  void release_all();

  std::vector<UnitLayout> layout() const;
  ShardResidency residency() const;
  void reset_peaks();
  // Seconds spent waiting for gathers and reductions.
  double wait_seconds() const { return wait_seconds_; }

  // Called by parameter `index`'s tensor hook before autograd accumulates its gradient, and by
  // its post-accumulate-grad hook after.
  void on_gradient_arriving(std::size_t index);
  void on_gradient(std::size_t index);

 private:
  enum class State { released, gathering, gathered };
  struct Unit {
    std::vector<std::size_t> members;  // indices into parameters_, decayed ones first
    std::int64_t numel = 0, decay_numel = 0, shard = 0;
    at::Tensor whole;  // [shard * world], the parameters' storage
    at::Tensor local;  // [shard], this rank's part of it
    at::Tensor gradient;  // [shard * world] fp32, what the parameters' .grad view while they come
    c10::intrusive_ptr<c10d::Work> pending;    // its gather
    c10::intrusive_ptr<c10d::Work> reducing;   // its gradient buffer's reduction
    State state = State::released;
    std::size_t gradients_seen = 0;
  };

  void fill_deferred(const std::function<void(std::size_t, const at::Tensor&)>& fill);
  void start_gather(Unit& unit);
  void wait_gathered(Unit& unit);
  void release(Unit& unit);    // frees unless all gathered, and notes the residency
  void adopt_whole();          // the gathered whole model's values into this rank's shards
  void free_unit(Unit& unit);  // frees (after a gather in flight has landed)
  // Starts the reduction of the unit's gradient buffer (in place), which runs while backward goes
  // on; finish_reduction() waits for it and adds this rank's shard of it to the gradient shard.
  // Every reader of the shards runs after finish_backward(), which finishes it.
  void reduce(Unit& unit);
  void finish_reduction();
  void wait(const c10::intrusive_ptr<c10d::Work>& work);
  // Runs a collective's call, letting before_failing_ act first when it throws.
  template <class F>
  auto guarded(F&& f) -> decltype(f());
  void note_gathered();
  void note_gradients();
  // Parameter `index`'s place in its unit's gradient buffer.
  at::Tensor gradient_place(std::size_t index) const;
  bool in_range(int unit) const { return unit >= 0 && static_cast<std::size_t>(unit) < units_.size(); }

  std::vector<at::Tensor> parameters_;
  std::vector<std::size_t> unit_of_;      // per parameter
  std::vector<std::int64_t> offset_of_;   // per parameter, where it starts in its unit's buffers
  std::vector<Unit> units_;
  std::vector<engine::NamedParameter> shard_parameters_;
  std::vector<at::Tensor> shard_gradients_;
  std::vector<at::Tensor> unit_gradients_;  // per unit: [shard] fp32, what shard_gradients_ view
  std::vector<unsigned> arrival_hooks_;     // per parameter, its tensor hook's handle
  // For the parameters the unit computing and the one prefetched; for the gradients the block's
  // whose gradients are coming, the one being reduced and unit 0's (of a block's size in some
  // models).
  UnitBufferPool parameter_buffers_{2};
  UnitBufferPool gradient_buffers_{3};
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::function<void()> before_failing_;
  int rank_ = 0, world_ = 1;
  bool all_gathered_ = false;
  std::optional<std::size_t> read_unit_;  // the unit read_unit_of() holds
  std::optional<std::size_t> reducing_;   // the unit whose reduce-scatter is in flight
  ShardResidency residency_;
  double wait_seconds_ = 0;
};

}  // namespace llmrdzv::dist
