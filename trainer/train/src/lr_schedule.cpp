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

namespace {

// DeepSpeed's lr_schedules.py: warmup lasts max(2, warmup_num_steps) iterations and rises as
// log(i + 1) / log(W) ("log", its default) or i / W ("linear").
double deepspeed_rate(const LrSchedule& s, std::int64_t iteration) {
  const DeepSpeedSchedule& ds = s.deepspeed;
  const std::int64_t warmup = std::max<std::int64_t>(2, s.warmup_steps);
  const auto i = static_cast<double>(iteration);
  const double rise = ds.log_warmup ? std::log(i + 1) / std::log(static_cast<double>(warmup)) : i / static_cast<double>(warmup);
  const bool warming = iteration < warmup;
  switch (ds.type) {
    case DeepSpeedScheduler::warmup_lr:
      return ds.warmup_min_lr + (s.peak_lr - ds.warmup_min_lr) * (warming ? rise : 1.0);
    case DeepSpeedScheduler::warmup_decay_lr: {
      const double decay = std::max(0.0, static_cast<double>(s.total_steps - iteration) /
                                             std::max(1.0, static_cast<double>(s.total_steps - warmup)));
      return ds.warmup_min_lr + (s.peak_lr - ds.warmup_min_lr) * (warming ? rise : decay);
    }
    case DeepSpeedScheduler::warmup_cosine_lr: {
      if (warming) return s.peak_lr * (ds.warmup_min_ratio + rise * (1.0 - ds.warmup_min_ratio));
      const double progress = std::min(1.0, static_cast<double>(iteration - warmup + 1) /
                                                static_cast<double>(std::max<std::int64_t>(1, s.total_steps - warmup)));
      const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
      return s.peak_lr * std::max(0.0, ds.cos_min_ratio + (1.0 - ds.cos_min_ratio) * cosine);
    }
    case DeepSpeedScheduler::none: break;
  }
  return s.peak_lr;
}

}  // namespace

double LrSchedule::at(std::int64_t completed_steps) const {
  if (deepspeed.type != DeepSpeedScheduler::none) return deepspeed_rate(*this, completed_steps);
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
