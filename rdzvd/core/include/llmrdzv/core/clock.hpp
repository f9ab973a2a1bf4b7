// Time as the core sees it. The daemon passes the steady clock; unit tests pass a ManualClock so
// every timing rule (last call, heartbeats, timeouts, idle collection) is tested without sleeping.
#pragma once

#include <chrono>

namespace llmrdzv::core {

using TimePoint = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
};

class ManualClock final : public Clock {
 public:
  TimePoint now() const override { return now_; }
  void advance(Millis by) { now_ += by; }

 private:
  TimePoint now_{std::chrono::hours(1)};
};

}  // namespace llmrdzv::core
