// --profile_steps: records a few training steps with torch's profiler (Kineto: CPU ops, and on a
// GPU its kernels and copies) and writes them as a Chrome trace each rank, for chrome://tracing
// or https://ui.perfetto.dev: where a step's time goes, op by op and kernel by kernel.
#pragma once

#include <cstdint>
#include <filesystem>

namespace llmrdzv::train {

class StepProfiler {
 public:
  // Records steps first_step + 2 .. first_step + 1 + steps (the first step of a run warms up
  // caches and allocators) into `trace`; steps = 0 records nothing.
  StepProfiler(std::int64_t steps, std::int64_t first_step, std::filesystem::path trace, bool cuda);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Around each optimizer step, with its 0-based index. after_step() returns true when it wrote
  // the trace; so does finish(), at the end of training, for a run shorter than the window.
  void before_step(std::int64_t step);
  bool after_step(std::int64_t step);
  bool finish();
  const std::filesystem::path& trace() const { return trace_; }

 private:
  void stop_and_save();

  std::int64_t begin_ = 0, end_ = 0;  // profiled steps [begin, end)
  std::filesystem::path trace_;
  bool cuda_ = false;
  bool recording_ = false;
};

}  // namespace llmrdzv::train
