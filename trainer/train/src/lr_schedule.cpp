// The warmup + decay multipliers of lr_schedule.hpp.
#include "llmrdzv/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace llmrdzv::train {

std::int64_t resolve_warmup_steps(std::int64_t warmup_steps, double warmup_ratio, std::int64_t total_steps) {
  if (warmup_steps > 0) return warmup_steps;
  return static_cast<std::int64_t>(std::ceil(warmup_ratio * static_cast<double>(total_steps)));
}

double LrSchedule::at(std::int64_t completed_steps) const {
  if (kind == LrSchedulerType::constant) return peak_lr;  // transformers' "constant" ignores warmup
  const auto step = static_cast<double>(completed_steps);
  if (completed_steps < warmup_steps) return peak_lr * step / static_cast<double>(std::max<std::int64_t>(1, warmup_steps));
  const double decay_span = static_cast<double>(std::max<std::int64_t>(1, total_steps - warmup_steps));
  const double progress = (step - static_cast<double>(warmup_steps)) / decay_span;
  switch (kind) {
    case LrSchedulerType::linear:
      return peak_lr * std::max(0.0, 1.0 - progress);
    case LrSchedulerType::cosine:
      return peak_lr * std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    case LrSchedulerType::constant:
    case LrSchedulerType::constant_with_warmup:
      return peak_lr;
  }
  return peak_lr;
}

}  // namespace llmrdzv::train
