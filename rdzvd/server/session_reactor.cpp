// Session stream reactor (see session_reactor.hpp).
#include "session_reactor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "wire.hpp"

namespace llmrdzv::server {

// What the core holds for this stream: the session sink, and the waiters (join, calls) the
// stream started. It outlives the reactor: the core and its callbacks reach the reactor only
// through post(), which runs after the core lock and drops the action once the reactor is done.
// Every member but the reactor pointer is guarded by the core lock.
class SessionReactor::Link final : public core::SessionSink, public std::enable_shared_from_this<Link> {
 public:
  Link(CoreHost& host, SessionReactor* reactor) : host_(host), reactor_(reactor) {}

  void send(const core::SessionEvent& event) override {
    std::optional<core::Assignment> assignment;
    if (event.kind == core::EventKind::opened) assignment = std::exchange(joined_, std::nullopt);
    post([event, assignment](SessionReactor& reactor) {
      llmrdzv::v1::SessionEvent wire;
      to_wire(event, wire);
      if (assignment) to_wire(*assignment, *wire.mutable_assignment());
      reactor.enqueue(std::move(wire));
    });
  }
  void finish(const core::Status& status) override {
    post([status = to_grpc(status)](SessionReactor& reactor) { reactor.end(status); });
  }

  // Opens the member's session for `round`: after a unary Join, or after the join this stream
  // carried.
  core::Status open(core::Core& core, const core::Scope& scope, const std::string& participant_id,
                    std::uint64_t round) {
    auto opened = core.open_session(scope, participant_id, round, shared_from_this());
    if (!opened.ok()) return opened.status();
    session_id_ = opened.value();
    who_ = "participant '" + participant_id + "' of rendezvous '" + scope.rdzv_id + "' (round " +
           std::to_string(round) + ")";
    if (closed_) core.close_session(std::exchange(session_id_, 0));  // the stream ended meanwhile
    return core::Status::Ok();
  }

  // SessionOpen with a join: Join, then open the session for the round it completes.
  void join(core::Core& core, const core::JoinRequest& request) {
    auto done = [self = shared_from_this(), scope = request.scope, participant_id = request.participant_id](
                    const core::Status& status, const core::Assignment& assignment) {
      if (!status.ok()) return self->finish(status);
      self->host_.defer([self, scope, participant_id, assignment] {
        self->host_.run([&](core::Core& core) {
          self->joined_ = assignment;  // rides on the OPENED event open_session sends
          const core::Status opened = self->open(core, scope, participant_id, assignment.round);
          self->joined_.reset();
          if (!opened.ok()) self->finish(opened);
        });
      });
    };
    join_ = core.join(request, std::move(done));
  }

  // Runs the store operation a SessionCall carries; its CALL_DONE event goes out when it finishes.
  // An id that is still outstanding is refused: the calls are tracked by id, and a second one
  // would leave the first's waiter behind once either finished.
  void call(core::Core& core, const llmrdzv::v1::SessionCall& call) {
    const std::uint64_t id = call.id();
    if (std::ranges::any_of(calls_, [id](const auto& entry) { return entry.first == id; })) {
      answer_call(id, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "call id " + std::to_string(id) + " is still outstanding on this session"),
                  {});
      return;
    }
    core::KvCallback done = [self = shared_from_this(), id, method = method_name(call),
                             started = RpcMetrics::Clock::now()](const core::Status& status,
                                                                 std::vector<std::string> values) {
      if (method) self->host_.rpcs().kv_call_took(method, RpcMetrics::Clock::now() - started);
      std::erase_if(self->calls_, [id](const auto& entry) { return entry.first == id; });
      self->answer_call(id, to_grpc(status), std::move(values));
    };
    auto waiter = start(core, call, std::move(done));
    if (waiter.id != 0) calls_.emplace_back(id, std::move(waiter));
  }

  // Queues the CALL_DONE event of call `id`.
  void answer_call(std::uint64_t id, grpc::Status status, std::vector<std::string> values) {
    post([id, status = std::move(status), values = std::move(values)](SessionReactor& reactor) mutable {
      llmrdzv::v1::SessionEvent event;
      event.set_kind(llmrdzv::v1::SessionEvent::CALL_DONE);
      event.set_rank(-1);
      event.set_call_id(id);
      event.set_code(status.error_code());
      event.set_detail(status.error_message());
      for (auto& value : values) event.add_values(std::move(value));
      reactor.enqueue(std::move(event));
    });
  }

  // Gives up the call `id` if it is still blocked; its callback then answers CANCELLED.
  void cancel_call(core::Core& core, std::uint64_t id) {
    const auto it = std::find_if(calls_.begin(), calls_.end(), [id](const auto& entry) { return entry.first == id; });
    if (it != calls_.end()) core.cancel(it->second);  // the callback erases the entry
  }

  void heartbeat(core::Core& core) const { core.heartbeat(session_id_); }

  // The stream is over: give up the join and the calls, and close the session (the core counts
  // that as the member's failure unless it left first).
  void close(core::Core& core) {
    closed_ = true;
    core.cancel(join_);
    for (const auto& [id, waiter] : std::exchange(calls_, {})) core.cancel(waiter);
    core.close_session(std::exchange(session_id_, 0));
  }

  void detach() {
    std::lock_guard lock(mutex_);
    reactor_ = nullptr;
  }

  // The read side saw the SessionOpen (any thread).
  void open_received() { open_received_ = true; }

  // The daemon decided to end the stream, but its write in flight has not been taken for the
  // grace period: cancel it (io thread, no lock held).
  void cancel_stalled_write(std::chrono::milliseconds grace) {
    SessionReactor* reactor = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (reactor_ && reactor_->begin_cancel()) reactor = reactor_;
    }
    if (!reactor) return;  // the client took events meanwhile (watched again), or the stream is over
    // The reactor is alive here: begin_cancel() holds its Finish (and so OnDone) back. Not after.
    if (reactor->cancel_stalled()) {
      warn("its client has taken no event for " + std::to_string(grace.count()) +
           " ms (the heartbeat timeout) after the daemon ended the stream; cancelled it");
    }
  }

  // A warning about this member's stream in the daemon's log (no lock held).
  void warn(const std::string& what) {
    host_.run([&](core::Core& core) {
      core.log(core::LogLevel::warn, "Session stream of " + (who_.empty() ? "a member not yet opened" : who_) +
                                         ": " + what);
    });
  }

  // From the io thread, `limit` after the stream started: ends it if no SessionOpen came.
  void expire_unopened(std::chrono::milliseconds limit) {
    if (open_received_) return;
    std::lock_guard lock(mutex_);
    if (reactor_)
      reactor_->end(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                 "no SessionOpen within " + std::to_string(limit.count()) +
                                     " ms (the heartbeat timeout) of the Session stream's start"));
  }

 private:
  // The unary RPC the call stands for, as /metrics names KV methods; null for a call without one.
  static const char* method_name(const llmrdzv::v1::SessionCall& call) {
    using Call = llmrdzv::v1::SessionCall;
    switch (call.op_case()) {
      case Call::kGet: return "Get";
      case Call::kWait: return "Wait";
      case Call::kMultiGet: return "MultiGet";
      case Call::kBarrier: return "Barrier";
      case Call::kQueuePop: return "QueuePop";
      case Call::OP_NOT_SET: break;
    }
    return nullptr;
  }

  static core::WaiterRef start(core::Core& core, const llmrdzv::v1::SessionCall& call, core::KvCallback done) {
    using Call = llmrdzv::v1::SessionCall;
    switch (call.op_case()) {
      case Call::kGet: {
        const auto& r = call.get();
        return core.get(from_wire(r.scope()), r.round(), r.key(), r.timeout_ms(), std::move(done));
      }
      case Call::kWait: {
        const auto& r = call.wait();
        return core.wait(from_wire(r.scope()), r.round(), {r.keys().begin(), r.keys().end()}, r.timeout_ms(),
                         std::move(done));
      }
      case Call::kMultiGet: {
        const auto& r = call.multi_get();
        return core.multi_get(from_wire(r.scope()), r.round(), {r.keys().begin(), r.keys().end()}, r.timeout_ms(),
                              std::move(done));
      }
      case Call::kBarrier: {
        const auto& r = call.barrier();
        return core.barrier(from_wire(r.scope()), r.round(), r.key(), r.world_size(), r.timeout_ms(),
                            std::move(done));
      }
      case Call::kQueuePop: {
        const auto& r = call.queue_pop();
        return core.queue_pop(from_wire(r.scope()), r.round(), r.key(), r.block(), r.timeout_ms(), std::move(done));
      }
      case Call::OP_NOT_SET: break;
    }
    done(core::error(core::Code::invalid_argument,
                     "a SessionCall needs an operation (get, wait, multi_get, barrier or queue_pop)"),
         {});
    return {};
  }

  // Only from inside host_.run(): `action(reactor)` right after the core lock, if it still lives.
  template <class Action>
  void post(Action action) {
    host_.defer([self = shared_from_this(), action = std::move(action)]() mutable {
      std::lock_guard lock(self->mutex_);
      if (self->reactor_) action(*self->reactor_);
    });
  }

  CoreHost& host_;
  std::mutex mutex_;  // guards reactor_
  SessionReactor* reactor_;
  std::uint64_t session_id_ = 0;
  core::WaiterRef join_;
  std::vector<std::pair<std::uint64_t, core::WaiterRef>> calls_;  // still blocked, by call id
  std::optional<core::Assignment> joined_;
  bool closed_ = false;
  std::string who_;  // for the log: participant, rendezvous and round, once opened
  std::atomic<bool> open_received_{false};
};

SessionReactor::SessionReactor(CoreHost& host, grpc::CallbackServerContext* context)
    : host_(host), context_(context), link_(std::make_shared<Link>(host, this)) {
  const core::CoreSettings settings = host_.run([](core::Core& core) { return core.settings(); });
  max_queued_events_ = settings.limits.max_waiters;
  max_queued_bytes_ = settings.limits.max_bytes;
  write_grace_ = settings.heartbeat_timeout;
  host_.run_after(settings.heartbeat_timeout,
                  [link = link_, limit = settings.heartbeat_timeout] { link->expire_unopened(limit); });
  StartRead(&request_);
}

void SessionReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client half-closed, went away, or the call was cancelled
    host_.run([this](core::Core& core) { link_->close(core); });
    end(grpc::Status::OK);
    return;
  }
  if (!opened_) {
    if (!request_.has_open()) {
      end(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first Session message must be a SessionOpen"));
      return;
    }
    opened_ = true;
    link_->open_received();
    open(request_.open());
    return;
  }
  if (request_.has_heartbeat()) {
    host_.run([this](core::Core& core) { link_->heartbeat(core); });
  } else if (request_.has_call()) {
    host_.run([this](core::Core& core) { link_->call(core, request_.call()); });
  } else if (request_.kind_case() == llmrdzv::v1::SessionRequest::kCancel) {
    host_.run([this](core::Core& core) { link_->cancel_call(core, request_.cancel()); });
  } else {
    end(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     "after SessionOpen a Session carries only heartbeats, calls and cancels"));
    return;
  }
  read_next();
}

void SessionReactor::open(const llmrdzv::v1::SessionOpen& open) {
  if (open.has_join()) {
    host_.run([&](core::Core& core) { link_->join(core, from_wire(open.join())); });
    read_next();
    return;
  }
  const core::Status status = host_.run([&](core::Core& core) {
    return link_->open(core, from_wire(open.scope()), open.participant_id(), open.round());
  });
  if (!status.ok()) {
    end(to_grpc(status));
    return;
  }
  read_next();
}

void SessionReactor::read_next() {
  std::lock_guard lock(write_mutex_);
  if (!finished_ && !finish_after_writes_) StartRead(&request_);  // no read after Finish
}

void SessionReactor::enqueue(llmrdzv::v1::SessionEvent event) {
  std::lock_guard lock(write_mutex_);
  if (finished_ || finish_after_writes_) return;
  const std::size_t bytes = event.ByteSizeLong();
  if (!queue_.empty() && (queue_.size() >= max_queued_events_ || queued_bytes_ + bytes > max_queued_bytes_)) {
    // The client sends calls but does not read their answers: keep only the write in flight and
    // end the stream after it (the member then fails: it can no longer hear its rendezvous).
    queue_.resize(1);
    queued_bytes_ = queue_.front().ByteSizeLong();
    const std::string why = "the client does not read its Session stream: over " +
                            std::to_string(max_queued_events_) + " events (limits.max_waiters) or " +
                            std::to_string(max_queued_bytes_) + " bytes (limits.max_bytes) wait to be written";
    finish_after_writes_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, why);
    host_.run_after(std::chrono::milliseconds(0), [link = link_, why] { link->warn(why + "; ending it"); });
    watch_stalled_write();
    return;
  }
  queued_bytes_ += bytes;
  queue_.push_back(std::move(event));
  if (!writing_) {
    writing_ = true;
    StartWrite(&queue_.front());
  }
}

void SessionReactor::OnWriteDone(bool ok) {
  std::lock_guard lock(write_mutex_);
  ++writes_done_;
  queued_bytes_ -= queue_.front().ByteSizeLong();
  queue_.pop_front();
  if (!ok) {  // the client is gone; the read side reports it
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (!queue_.empty()) {
    StartWrite(&queue_.front());
    return;
  }
  writing_ = false;
  if (finish_after_writes_ && !finished_ && !cancelling_) {  // else cancel_stalled() finishes
    finished_ = true;
    finish_stream(*finish_after_writes_);
  }
}

void SessionReactor::end(const grpc::Status& status) {
  std::lock_guard lock(write_mutex_);
  if (finished_ || finish_after_writes_) return;
  if (writing_) {
    finish_after_writes_ = status;  // deliver queued events (e.g. SHUTDOWN) first
    watch_stalled_write();
    return;
  }
  finished_ = true;
  finish_stream(status);
}

void SessionReactor::watch_stalled_write() {
  writes_watched_ = writes_done_;
  host_.run_after(write_grace_, [link = link_, grace = write_grace_] { link->cancel_stalled_write(grace); });
}

bool SessionReactor::begin_cancel() {
  std::lock_guard lock(write_mutex_);
  if (finished_ || !writing_) return false;
  if (writes_done_ != writes_watched_) {  // the client reads, if slowly: give it another period
    watch_stalled_write();
    return false;
  }
  cancelling_ = true;
  return true;
}

bool SessionReactor::cancel_stalled() {
  bool stalled = false;
  {
    std::lock_guard lock(write_mutex_);
    stalled = writing_;  // else the last write went out meanwhile: just finish
  }
  // Outside the lock: gRPC may run OnWriteDone(false) on this thread before TryCancel returns.
  if (stalled) context_->TryCancel();
  std::optional<grpc::Status> status;
  {
    std::lock_guard lock(write_mutex_);
    cancelling_ = false;
    if (!writing_ && !finished_) {  // else OnWriteDone, still to come, finishes
      finished_ = true;
      status = finish_after_writes_;
    }
  }
  if (status) finish_stream(*status);
  return stalled;
}

void SessionReactor::finish_stream(const grpc::Status& status) {
  host_.rpcs().finished(call_, status.error_code());  // before Finish, which may delete this
  Finish(status);
}

void SessionReactor::OnDone() {
  link_->detach();
  host_.run([this](core::Core& core) { link_->close(core); });
  delete this;
}

}  // namespace llmrdzv::server
