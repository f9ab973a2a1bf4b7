// The core's home in the daemon: one mutex serialises every call into it, and one Boost.Asio
// steady_timer, re-armed to the core's earliest deadline, drives its timeouts. Completions the
// core produces under the lock (finishing gRPC reactors, writing session events) are deferred
// and run right after the lock is released, so gRPC is never called with the lock held. It also
// holds the server layer's RPC counters, which every handler reaches through it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "llmrdzv/core/core.hpp"
#include "rpc_metrics.hpp"

namespace llmrdzv::server {

class CoreHost {
 public:
  CoreHost(core::CoreConfig config, core::LogSink log, boost::asio::io_context& io);

  // Runs fn(core) under the lock, then the actions it deferred, then makes sure the timer is
  // armed for the core's earliest deadline.
  template <class Fn>
  auto run(Fn&& fn) {
    Deferred deferred;
    if constexpr (std::is_void_v<decltype(fn(core_))>) {
      {
        std::lock_guard lock(mutex_);
        Scope scope(*this, deferred);
        fn(core_);
      }
      finish(deferred);
    } else {
      std::optional<decltype(fn(core_))> result;
      {
        std::lock_guard lock(mutex_);
        Scope scope(*this, deferred);
        result.emplace(fn(core_));
      }
      finish(deferred);
      return std::move(*result);
    }
  }

  // Only from inside run(): queue an action for after the lock is released.
  void defer(std::function<void()> action) { current_->actions.push_back(std::move(action)); }

  // Runs `action` on the io thread after `delay` (not under the lock). From any thread.
  void run_after(std::chrono::milliseconds delay, std::function<void()> action);

  // RPCs by method and status, KV call latencies (thread-safe, not under the core lock).
  RpcMetrics& rpcs() { return rpcs_; }

 private:
  struct Deferred {
    std::vector<std::function<void()>> actions;
    bool rearm = false;
  };
  struct Scope {
    Scope(CoreHost& host, Deferred& deferred) : host_(host), deferred_(deferred) { host.current_ = &deferred; }
    ~Scope();
    CoreHost& host_;
    Deferred& deferred_;
  };

  void finish(Deferred& deferred);
  void arm();  // io thread only
  void on_timer(const boost::system::error_code& ec);

  core::SteadyClock clock_;
  core::Core core_;
  std::mutex mutex_;
  Deferred* current_ = nullptr;
  std::optional<core::TimePoint> armed_;  // guarded by mutex_
  boost::asio::io_context& io_;
  boost::asio::steady_timer timer_;
  RpcMetrics rpcs_;
};

}  // namespace llmrdzv::server
