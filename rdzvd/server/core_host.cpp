// Serialised access to the core and its single Asio timer (see core_host.hpp).
#include "core_host.hpp"

#include <boost/asio/post.hpp>
#include <memory>

namespace llmrdzv::server {

CoreHost::CoreHost(core::CoreConfig config, core::LogSink log, boost::asio::io_context& io)
    : core_(std::move(config), clock_, std::move(log)), io_(io), timer_(io) {}

CoreHost::Scope::~Scope() {
  // Still under the lock: note whether the core now has an earlier deadline than the timer.
  const auto next = host_.core_.next_deadline();
  if (next && (!host_.armed_ || *next < *host_.armed_)) {
    host_.armed_ = next;
    deferred_.rearm = true;
  }
  host_.current_ = nullptr;
}

void CoreHost::finish(Deferred& deferred) {
  for (auto& action : deferred.actions) action();
  if (deferred.rearm) boost::asio::post(io_, [this] { arm(); });
}

void CoreHost::run_after(std::chrono::milliseconds delay, std::function<void()> action) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_, delay);
  timer->async_wait([timer, action = std::move(action)](const boost::system::error_code& ec) {
    if (!ec) action();
  });
}

void CoreHost::arm() {
  std::optional<core::TimePoint> next;
  {
    std::lock_guard lock(mutex_);
    next = armed_ = core_.next_deadline();
  }
  if (!next) return;
  timer_.expires_at(*next);  // cancels a wait for a later deadline
  timer_.async_wait([this](const boost::system::error_code& ec) { on_timer(ec); });
}

void CoreHost::on_timer(const boost::system::error_code& ec) {
  if (ec == boost::asio::error::operation_aborted) return;  // re-armed for an earlier deadline
  run([](core::Core& core) { core.tick(); });
  arm();
}

}  // namespace llmrdzv::server
