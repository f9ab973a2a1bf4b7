// The core's ordered deadline queue (see timer_queue.hpp).
#include "llmrdzv/core/timer_queue.hpp"

namespace llmrdzv::core {

TimerQueue::Key TimerQueue::schedule(TimePoint at, std::function<void()> action) {
  Key key{at, next_id_++};
  timers_.emplace(key, std::move(action));
  return key;
}

std::optional<TimePoint> TimerQueue::next_deadline() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.begin()->first.first;
}

void TimerQueue::run_due(TimePoint now) {
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto action = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    action();
  }
}

}  // namespace llmrdzv::core
