// Session stream handling (see session.hpp). The sync gRPC stream allows one reader and one
// writer at a time: the reader thread only reads; writes (heartbeats, calls) take turns under
// write_mutex_, and the heartbeat thread, or a failed opened(), makes the final Finish().
#include "session.hpp"

#include <cstdio>

#include "llmrdzv/client/handshake.hpp"
#include "rpc.hpp"

namespace llmrdzv::client::detail {
namespace {

std::optional<SessionEvent::Kind> kind_of(llmrdzv::v1::SessionEvent::Kind kind) {
  using Wire = llmrdzv::v1::SessionEvent;
  switch (kind) {
    case Wire::MEMBER_FAILED: return SessionEvent::Kind::member_failed;
    case Wire::MEMBER_LEFT: return SessionEvent::Kind::member_left;
    case Wire::ROUND_CLOSED: return SessionEvent::Kind::round_closed;
    case Wire::PARTICIPANT_WAITING: return SessionEvent::Kind::participant_waiting;
    case Wire::SHUTDOWN: return SessionEvent::Kind::shutdown;
    default: return std::nullopt;
  }
}

}  // namespace

Session::Session(llmrdzv::v1::Rendezvous::Stub& stub, SessionSpec spec, SessionCallback on_event)
    : spec_(std::move(spec)), on_event_(std::move(on_event)) {
  add_credential(context_, spec_.scope.rdzv_id(), spec_.scope.ticket());
  stream_ = stub.Session(&context_);
  llmrdzv::v1::SessionRequest open;
  if (spec_.join) {
    *open.mutable_open()->mutable_join() = *spec_.join;
  } else {
    *open.mutable_open()->mutable_scope() = spec_.scope;
    open.mutable_open()->set_participant_id(spec_.participant_id);
    open.mutable_open()->set_round(spec_.round);
  }
  open_written_ = stream_->Write(open);
  reader_ = std::thread([this] { read_events(); });
}

grpc::Status Session::opened() {
  std::unique_lock lock(mutex_);
  if (open_written_) {
    changed_.wait_for(lock, spec_.open_deadline, [this] { return opened_ || reads_done_; });
  }
  if (opened_ && !reads_done_) {
    if (assignment_.heartbeat_interval_ms() > 0) {
      spec_.heartbeat_interval = std::chrono::milliseconds(assignment_.heartbeat_interval_ms());
    }
    heartbeater_ = std::thread([this] { send_heartbeats(); });
    return grpc::Status::OK;
  }
  const bool timed_out = !reads_done_;
  const grpc::Status status = finish_after_cancel(lock);
  if (timed_out) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "no OPENED reply within " + std::to_string(spec_.open_deadline.count()) + " ms");
  }
  return status.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "stream ended before OPENED") : status;
}

Session::~Session() { close(); }

void Session::expect_replacement() {
  std::lock_guard lock(mutex_);
  replacement_expected_ = true;
}

void Session::close() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  changed_.notify_all();
  if (heartbeater_.joinable()) {
    heartbeater_.join();
  } else if (reader_.joinable()) {  // opened() was not called
    std::unique_lock lock(mutex_);
    finish_after_cancel(lock);
  }
}

bool Session::write(const llmrdzv::v1::SessionRequest& request) {
  std::lock_guard lock(write_mutex_);
  return !finished_ && stream_->Write(request);
}

grpc::Status Session::finish_after_cancel(std::unique_lock<std::mutex>& lock) {
  if (!reads_done_) context_.TryCancel();  // once the reads ended, the daemon's status is in: keep it
  changed_.wait(lock, [this] { return reads_done_; });
  lock.unlock();
  if (reader_.joinable()) reader_.join();
  std::lock_guard writing(write_mutex_);
  finished_ = true;
  return stream_->Finish();
}

std::optional<Session::CallResult> Session::call(llmrdzv::v1::SessionCall call, std::chrono::milliseconds wait) {
  llmrdzv::v1::SessionRequest message;
  {
    std::lock_guard lock(mutex_);
    if (!opened_ || reads_done_ || closing_) return std::nullopt;
    call.set_id(next_call_id_++);
    calls_.emplace(call.id(), std::nullopt);
  }
  const std::uint64_t id = call.id();
  *message.mutable_call() = std::move(call);
  const bool written = write(message);
  std::unique_lock lock(mutex_);
  const bool answered = written && changed_.wait_for(lock, wait, [&] {
    return calls_.at(id).has_value() || reads_done_ || closing_;
  });
  std::optional<CallResult> answer = std::move(calls_.at(id));
  calls_.erase(id);
  if (answer) return answer;
  if (written && !answered) {
    lock.unlock();
    llmrdzv::v1::SessionRequest cancel;  // no waiter left behind in the daemon
    cancel.set_cancel(id);
    write(cancel);
    return CallResult{grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                   "no answer on the session stream within " + std::to_string(wait.count()) + " ms"),
                      {}};
  }
  return CallResult{grpc::Status(grpc::StatusCode::UNAVAILABLE, "the session stream ended before the answer"), {}};
}

void Session::read_events() {
  llmrdzv::v1::SessionEvent wire;
  while (stream_->Read(&wire)) {
    if (wire.kind() == llmrdzv::v1::SessionEvent::OPENED) {
      std::lock_guard lock(mutex_);
      opened_ = true;
      round_ = wire.round();
      assignment_ = wire.assignment();
      changed_.notify_all();
      continue;
    }
    if (wire.kind() == llmrdzv::v1::SessionEvent::CALL_DONE) {
      std::lock_guard lock(mutex_);
      if (auto it = calls_.find(wire.call_id()); it != calls_.end()) {
        auto& values = *wire.mutable_values();
        it->second = CallResult{grpc::Status(grpc::StatusCode(wire.code()), wire.detail()),
                                {std::make_move_iterator(values.begin()), std::make_move_iterator(values.end())}};
        changed_.notify_all();
      }
      continue;
    }
    const auto kind = kind_of(wire.kind());
    if (!kind) continue;  // a newer daemon's event kind this client does not know
    if (*kind == SessionEvent::Kind::shutdown) {
      std::lock_guard lock(mutex_);
      shutdown_seen_ = true;
    }
    deliver(SessionEvent{*kind, wire.round(), wire.rank(), wire.detail()});
  }
  std::lock_guard lock(mutex_);
  reads_done_ = true;
  changed_.notify_all();
}

void Session::send_heartbeats() {
  llmrdzv::v1::SessionRequest heartbeat;
  std::uint64_t seq = 0;
  std::unique_lock lock(mutex_);
  while (!closing_ && !reads_done_) {
    if (changed_.wait_for(lock, spec_.heartbeat_interval, [this] { return closing_ || reads_done_; })) break;
    heartbeat.mutable_heartbeat()->set_seq(++seq);
    lock.unlock();
    const bool written = write(heartbeat);
    lock.lock();
    if (!written) break;  // the stream broke; the reader sees it end too
  }
  const bool quiet = closing_ || shutdown_seen_;
  const bool replaced = replacement_expected_;
  const grpc::Status status = finish_after_cancel(lock);
  if (!quiet && !(replaced && status.error_code() == grpc::StatusCode::ABORTED)) {
    deliver(SessionEvent{SessionEvent::Kind::stream_lost, round_, -1,
                         "session stream to rdzvd " + spec_.endpoint + " ended: " +
                             (status.ok() ? std::string("closed by the daemon") : status.error_message())});
  }
}

void Session::deliver(const SessionEvent& event) {
  if (!on_event_) return;
  try {
    on_event_(event);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "llmrdzv client: session callback threw: %s\n", error.what());
  }
}

}  // namespace llmrdzv::client::detail
