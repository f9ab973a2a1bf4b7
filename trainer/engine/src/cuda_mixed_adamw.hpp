// The one-process engine's optimizer for bf16/fp16 weights on a GPU, where the build has the
// trainer's CUDA kernels: fp32 master weights (MasterWeights) and moments on the device, updated
// by one kernel per parameter (llmrdzv/optim/cuda_adamw.hpp) that also writes the new weights
// into the model. The clip coefficient stays on the device, and with one micro-batch per step the
// kernel reads the model's own bf16/fp16 gradients: no fp32 copy of the gradients, no pass to
// scale them, no copy of the masters back into the model.
#pragma once

#include <c10/core/Device.h>

#include <memory>

#include "llmrdzv/engine/adamw_updaters.hpp"
#include "llmrdzv/engine/master_weights.hpp"

namespace llmrdzv::engine {

class MixedPrecisionUpdater : public AdamWUpdater {
 public:
  // The gradients' global L2 norm (of the gradients times `multiplier`), unread on the device, and
  // the coefficient step() multiplies each gradient by, kept there too: `multiplier`, times
  // max_norm / (norm + 1e-6) when that is below 1 (max_norm > 0), as clip_grad_norm_. Gradients
  // folded over earlier micro-batches get the last one folded in first (sums in fp32).
  virtual GradientNorm finish_gradients(double max_norm, double multiplier) = 0;
};

// Null where it does not apply: no CUDA kernels in this build, LLMRDZV_CUDA_KERNELS=0, a device
// other than CUDA, or fp32 weights (no masters to copy from). `masters` must outlive it.
std::unique_ptr<MixedPrecisionUpdater> make_cuda_mixed_adamw(MasterWeights& masters, const AdamWSettings& settings,
                                                            c10::Device device);

}  // namespace llmrdzv::engine
