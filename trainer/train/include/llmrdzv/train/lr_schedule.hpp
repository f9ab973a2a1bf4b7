// Learning rate per optimizer step: linear warmup, then linear decay to 0, half-cosine decay to 0,
// or constant; or constant throughout (no warmup) — the multipliers of transformers'
// get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup,
// get_constant_schedule_with_warmup and get_constant_schedule, under run_clm's names. A
// DeepSpeed config's scheduler (--deepspeed) replaces them with DeepSpeed's own curves: WarmupLR,
// WarmupDecayLR and WarmupCosineLR, log or linear warmup over max(2, warmup) steps, evaluated at
// DeepSpeed's batch iteration = the number of updates made before (0 for the first).
// A pure function of the step, so resuming needs only the step count.
#pragma once

#include <cstdint>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

// warmup_steps when positive, else ceil(warmup_ratio * total_steps) (transformers' rule).
std::int64_t resolve_warmup_steps(std::int64_t warmup_steps, double warmup_ratio, std::int64_t total_steps);

struct LrSchedule {
  LrSchedulerType kind = LrSchedulerType::linear;
  double peak_lr = 0;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;
  DeepSpeedSchedule deepspeed{};  // type none: `kind` decides

  // The rate of the update made after `completed_steps` earlier updates (0 for the first).
  double at(std::int64_t completed_steps) const;
};

}  // namespace llmrdzv::train
