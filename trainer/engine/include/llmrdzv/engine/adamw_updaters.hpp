// The AdamW update of the one-process engine (and of data parallelism without offload), by
// device: on the CPU the project's fused SIMD kernel (llmrdzv::optim, one pass over p, g, m, v),
// elsewhere torch's multi-tensor fused AdamW (at::_fused_adamw_: one kernel launch per parameter
// group per step, where torch::optim::AdamW launches about ten per parameter). Both keep the same
// state per named parameter (exp_avg, exp_avg_sq, step), so checkpoints look the same whichever
// device wrote them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::engine {

// Adam moments and step count of one parameter, in the shape the checkpoint stores.
struct MomentState {
  at::Tensor exp_avg;
  at::Tensor exp_avg_sq;
  std::int64_t step = 0;
};

class AdamWUpdater {
 public:
  virtual ~AdamWUpdater() = default;
  // One AdamW step at this learning rate for every parameter that has a gradient, each gradient
  // first multiplied by grad_scale (a clipping coefficient; 1 = as they are). The CPU kernel
  // applies it as it reads the gradients, without writing them.
  virtual void step(double learning_rate, double grad_scale) = 0;
  // nullopt for a parameter not updated yet.
  virtual std::optional<MomentState> get(const NamedParameter& p) const = 0;
  virtual void set(const NamedParameter& p, MomentState state) = 0;
};

// Position of `p` in the list an updater was made with, by tensor identity (get/set find their
// state with it); throws std::logic_error for a parameter not in the list.
std::size_t parameter_index(const std::vector<NamedParameter>& parameters, const NamedParameter& p);

// The fused SIMD kernel; the parameters must be contiguous fp32 CPU tensors.
std::unique_ptr<AdamWUpdater> make_cpu_adamw(const std::vector<NamedParameter>& parameters, const AdamWSettings& s);
// at::_fused_adamw_ on the parameters' device (CUDA, or the CPU in tests).
std::unique_ptr<AdamWUpdater> make_multi_tensor_adamw(const std::vector<NamedParameter>& parameters,
                                                      const AdamWSettings& s);
// The CPU kernel for CPU parameters, the multi-tensor one for the rest.
std::unique_ptr<AdamWUpdater> make_adamw(const std::vector<NamedParameter>& parameters, const AdamWSettings& s);

}  // namespace llmrdzv::engine
