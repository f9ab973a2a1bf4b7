// The number formats a training run computes in, decided once the training device is known, as
// HF Trainer's --bf16/--fp16/--tf32 do: mixed precision keeps bf16 (or fp16) parameters and
// gradients for forward and backward and fp32 master weights and AdamW state in the optimizer
// (master_weights.hpp); fp16 adds dynamic loss scaling (LossScaler). Torch-free, so the rules are
// tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

enum class ComputeDtype { fp32, bf16, fp16 };

struct Precision {
  ComputeDtype dtype = ComputeDtype::fp32;  // parameters, activations and gradients
  bool tf32 = false;                        // fp32 matmuls/convolutions on TF32 tensor cores
  bool loss_scaling() const { return dtype == ComputeDtype::fp16; }
};

// What the training device offers.
struct DeviceTraits {
  bool cuda = false;
  std::string name = "cpu";  // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  double free_memory_bytes = 0;  // a GPU's free memory when it was asked (0 on the CPU)
  bool supports_bf16() const { return !cuda || compute_capability_major >= 8; }
  bool supports_tf32() const { return cuda && compute_capability_major >= 8; }
};

// --bf16/--fp16/--tf32 with their auto defaults: bf16 and TF32 on for CUDA GPUs that have them,
// fp32 on the CPU. Throws std::invalid_argument naming the flag when the device lacks what it asks.
Precision resolve_precision(const TrainOptions& options, const DeviceTraits& device);

// Bytes per parameter that training keeps on the device before any activation: the parameters
// and their gradients, plus, without offload, the fp32 master weights with their gradient (mixed
// precision) and both AdamW moments; an fp32 gradient buffer for synchronisation with several
// ranks. --offload optimizer leaves the parameters and one gradient in their type.
double device_bytes_per_parameter(ComputeDtype dtype, bool offload, int world_size);
// Bytes of one parameter in the training type: 4, or 2 for bf16 and fp16.
inline double compute_dtype_bytes(ComputeDtype dtype) { return dtype == ComputeDtype::fp32 ? 4 : 2; }
// The refusal, before the model reaches a GPU, of a run whose parameters, gradients and
// optimizer state alone exceed the GPU's free memory: a message naming the need, what the GPU has,
// and what to do; nullopt when it may fit (activations come on top and may still not fit).
std::optional<std::string> device_memory_shortfall(std::int64_t parameters, ComputeDtype dtype, bool offload,
                                                   int world_size, const DeviceTraits& device);

// "bf16 (fp32 master weights), TF32 on" for the log.
std::string describe(const Precision& precision);
const char* dtype_name(ComputeDtype dtype);

// fp16's dynamic loss scaling, as torch.amp.GradScaler does it with LossScaling's defaults: the
// loss is multiplied by scale() before backward; a step whose gradients overflowed (a non-finite
// norm) is skipped and the scale halved (not below min_scale); after `growth_interval` good steps in
// a row it doubles. With DeepSpeed's hysteresis h > 1, the first h - 1 overflows since the scale
// last grew (or, consecutive_hysteresis, since the last good step) skip their step without halving.
class LossScaler {
 public:
  explicit LossScaler(const LossScaling& settings = {});

  double scale() const { return scale_; }
  std::int64_t good_steps() const { return good_steps_; }
  std::int64_t hysteresis_left() const { return hysteresis_left_; }
  // After a step's gradients are known: true = apply the step, false = skip it (overflow).
  bool update(bool gradients_finite);
  // From a checkpoint; throws std::invalid_argument for a state no scaler can be in.
  void restore(double scale, std::int64_t good_steps, std::int64_t hysteresis_left);

 private:
  LossScaling settings_;
  double scale_;
  std::int64_t good_steps_ = 0;
  std::int64_t hysteresis_left_;
};

}  // namespace llmrdzv::train
