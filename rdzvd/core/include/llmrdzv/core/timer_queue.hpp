// Deadlines of the core (join and KV timeouts, last call, heartbeat checks, idle collection) in
// one ordered queue. The owner asks for the earliest deadline and calls run_due() when it
// passes; the daemon drives this from one Boost.Asio timer, tests from a ManualClock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "llmrdzv/core/clock.hpp"

namespace llmrdzv::core {

class TimerQueue {
 public:
  using Key = std::pair<TimePoint, std::uint64_t>;

  Key schedule(TimePoint at, std::function<void()> action);
  // Cancelling a timer that already ran or was cancelled is harmless.
  void cancel(const Key& key) { timers_.erase(key); }
  std::optional<TimePoint> next_deadline() const;
  // Runs every action due at `now`, including ones scheduled by the actions themselves.
  void run_due(TimePoint now);
  std::size_t size() const { return timers_.size(); }

 private:
  std::map<Key, std::function<void()>> timers_;
  std::uint64_t next_id_ = 1;
};

}  // namespace llmrdzv::core
