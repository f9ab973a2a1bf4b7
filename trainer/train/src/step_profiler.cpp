// StepProfiler (see step_profiler.hpp) over torch's Kineto profiler.
#include "step_profiler.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <set>

namespace llmrdzv::train {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> activities(bool cuda) {
  std::set<ActivityType> kinds{ActivityType::CPU};
  if (cuda) kinds.insert(ActivityType::CUDA);
  return kinds;
}

}  // namespace

StepProfiler::StepProfiler(std::int64_t steps, std::int64_t first_step, std::filesystem::path trace, bool cuda)
    : begin_(first_step + 1), end_(first_step + 1 + steps), trace_(std::move(trace)), cuda_(cuda) {
  if (steps > 0) profiler::prepareProfiler(ProfilerConfig(ProfilerState::KINETO), activities(cuda_));
}

StepProfiler::~StepProfiler() {
  if (recording_) profiler::disableProfiler();  // unwinding from an error: nothing is written
}

void StepProfiler::before_step(std::int64_t step) {
  if (step != begin_ || begin_ == end_) return;
  if (cuda_) torch::cuda::synchronize();  // the trace starts with no earlier kernel in flight
  profiler::enableProfiler(ProfilerConfig(ProfilerState::KINETO), activities(cuda_));
  recording_ = true;
}

bool StepProfiler::after_step(std::int64_t step) {
  if (!recording_ || step + 1 != end_) return false;
  stop_and_save();
  return true;
}

bool StepProfiler::finish() {
  if (!recording_) return false;
  stop_and_save();
  return true;
}

void StepProfiler::stop_and_save() {
  if (cuda_) torch::cuda::synchronize();  // every recorded kernel has finished
  recording_ = false;
  std::filesystem::create_directories(trace_.parent_path());
  profiler::disableProfiler()->save(trace_.string());
}

}  // namespace llmrdzv::train
