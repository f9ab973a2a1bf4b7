// Fused CPU AdamW on raw float arrays: one pass over parameters, gradients and both moments,
// with bias correction and decoupled weight decay, the same update torch::optim::AdamW makes.
// It is the optimizer of the ZeRO-Offload path (each rank updates its own host shard) and of
// every CPU run, so it is torch-free, SIMD (AVX-512 / AVX2 picked at run time, scalar fallback) and multi-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "llmrdzv/optim/adamw_hyperparams.hpp"

namespace llmrdzv::optim {

// Instruction sets the kernel has a variant for, from slowest to fastest.
enum class Isa { scalar, avx2, avx512 };

std::string_view isa_name(Isa isa);
// True when this CPU can run the variant (the scalar one always).
bool isa_supported(Isa isa);
// The fastest variant this CPU supports.
Isa best_isa();
// Every variant this CPU supports, scalar first.
std::vector<Isa> supported_isas();

struct KernelOptions {
  Isa isa = best_isa();
  // Worker threads including the caller; 0 = one per hardware thread.
  unsigned threads = 0;
};

// The four arrays one AdamW update touches; all have the same length.
struct AdamWState {
  std::span<float> param;
  std::span<const float> grad;
  std::span<float> exp_avg;
  std::span<float> exp_avg_sq;
};

// Applies AdamW step number `step` (1 for the first update; it drives bias correction) to the
// arrays in place. Throws std::invalid_argument on mismatched lengths, step < 1, an ISA this CPU
// lacks, or hyperparameters outside their domain (lr < 0, betas outside [0, 1), eps <= 0,
// grad_scale < 0 or not finite). The gradient array is only read.
void adamw_step(const AdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                const KernelOptions& options = {});

// The arrays of an update whose gradient comes in bf16 (the raw bits of a bf16 tensor's storage),
// with the updated parameters also written rounded to bf16 (as torch rounds: to nearest even, any
// NaN as 0x7FC0): the ZeRO-Offload step of bf16 models, which receives bf16 gradients and sends
// bf16 weights. All have the same length; `rounded` may be the gradient's own array.
struct Bf16AdamWState {
  std::span<float> param;  // fp32 master weights
  std::span<const std::uint16_t> grad;
  std::span<float> exp_avg;
  std::span<float> exp_avg_sq;
  std::span<std::uint16_t> rounded;
};

// adamw_step for a bf16 gradient, in one pass: the bits of widening the gradient to fp32, then
// adamw_step, then rounding `param` to bf16 into `rounded`. Throws as adamw_step does, and for a
// `rounded` that overlaps the gradient without being the same array.
void adamw_step_bf16(const Bf16AdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                     const KernelOptions& options = {});

// The benchmark's ceiling: the same memory traffic as adamw_step (reads param, grad, exp_avg,
// exp_avg_sq; writes param, exp_avg, exp_avg_sq) with no arithmetic, over the same threads and
// chunks. It leaves every array unchanged.
void adamw_traffic_pass(const AdamWState& state, const KernelOptions& options = {});

}  // namespace llmrdzv::optim
