// Session stream reactor (see session_reactor.hpp).
#include "session_reactor.hpp"

#include "wire.hpp"

namespace llmrdzv::server {

// What the core holds for this session. The core calls it under its lock, so it only defers;
// the deferred actions reach the reactor while it is alive and are dropped after OnDone.
class SessionReactor::Outbox final : public core::SessionSink, public std::enable_shared_from_this<Outbox> {
 public:
  Outbox(CoreHost& host, SessionReactor* reactor) : host_(host), reactor_(reactor) {}

  void send(const core::SessionEvent& event) override {
    host_.defer([self = shared_from_this(), event] {
      std::lock_guard lock(self->mutex_);
      if (self->reactor_) self->reactor_->enqueue(event);
    });
  }
  void finish(const core::Status& status) override {
    host_.defer([self = shared_from_this(), status = to_grpc(status)] {
      std::lock_guard lock(self->mutex_);
      if (self->reactor_) self->reactor_->end(status);
    });
  }
  void detach() {
    std::lock_guard lock(mutex_);
    reactor_ = nullptr;
  }

 private:
  CoreHost& host_;
  std::mutex mutex_;
  SessionReactor* reactor_;
};

SessionReactor::SessionReactor(CoreHost& host) : host_(host), outbox_(std::make_shared<Outbox>(host, this)) {
  StartRead(&request_);
}

void SessionReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client half-closed, went away, or the call was cancelled
    host_.run([this](core::Core& core) { core.close_session(std::exchange(session_id_, 0)); });
    end(grpc::Status::OK);
    return;
  }
  if (!opened_) {
    if (!request_.has_open()) {
      end(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first Session message must be a SessionOpen"));
      return;
    }
    open(request_.open());
    return;
  }
  if (!request_.has_heartbeat()) {
    end(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "after SessionOpen a Session carries only heartbeats"));
    return;
  }
  host_.run([this](core::Core& core) { core.heartbeat(session_id_); });
  StartRead(&request_);
}

void SessionReactor::open(const llmrdzv::v1::SessionOpen& open) {
  const core::Status status = host_.run([&](core::Core& core) {
    auto opened = core.open_session(from_wire(open.scope()), open.participant_id(), open.round(), outbox_);
    if (!opened.ok()) return opened.status();
    session_id_ = opened.value();
    return core::Status::Ok();
  });
  if (!status.ok()) {
    end(to_grpc(status));
    return;
  }
  opened_ = true;
  StartRead(&request_);
}

void SessionReactor::enqueue(const core::SessionEvent& event) {
  std::lock_guard lock(write_mutex_);
  if (finished_ || finish_after_writes_) return;
  to_wire(event, queue_.emplace_back());
  if (!writing_) {
    writing_ = true;
    StartWrite(&queue_.front());
  }
}

void SessionReactor::OnWriteDone(bool ok) {
  std::lock_guard lock(write_mutex_);
  queue_.pop_front();
  if (!ok) queue_.clear();  // the client is gone; the read side reports it
  if (!queue_.empty()) {
    StartWrite(&queue_.front());
    return;
  }
  writing_ = false;
  if (finish_after_writes_ && !finished_) {
    finished_ = true;
    Finish(*finish_after_writes_);
  }
}

void SessionReactor::end(const grpc::Status& status) {
  std::lock_guard lock(write_mutex_);
  if (finished_ || finish_after_writes_) return;
  if (writing_) {
    finish_after_writes_ = status;  // deliver queued events (e.g. SHUTDOWN) first
    return;
  }
  finished_ = true;
  Finish(status);
}

void SessionReactor::OnDone() {
  outbox_->detach();
  host_.run([this](core::Core& core) { core.close_session(std::exchange(session_id_, 0)); });
  delete this;
}

}  // namespace llmrdzv::server
