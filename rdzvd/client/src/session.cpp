// Session stream handling (see session.hpp). The sync gRPC stream allows one reader and one
// writer at a time: the reader thread only reads; the heartbeat thread owns every write after
// the opening message and the final Finish().
#include "session.hpp"

#include <cstdio>

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
  stream_ = stub.Session(&context_);
  llmrdzv::v1::SessionRequest open;
  *open.mutable_open()->mutable_scope() = spec_.scope;
  open.mutable_open()->set_participant_id(spec_.participant_id);
  open.mutable_open()->set_round(spec_.round);
  const bool written = stream_->Write(open);
  reader_ = std::thread([this] { read_events(); });

  std::unique_lock lock(mutex_);
  if (written) {
    changed_.wait_for(lock, spec_.open_deadline, [this] { return opened_ || reads_done_; });
  }
  if (opened_ && !reads_done_) {
    heartbeater_ = std::thread([this] { send_heartbeats(); });
    return;
  }
  const bool timed_out = !reads_done_;
  const grpc::Status status = finish_after_cancel(lock);
  if (timed_out) {
    throw RdzvError(ErrorCode::deadline_exceeded, "session (rdzvd " + spec_.endpoint + "): no OPENED reply within " +
                                                      std::to_string(spec_.open_deadline.count()) + " ms");
  }
  throw to_error(status.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "stream ended before OPENED") : status,
                 "session", spec_.endpoint);
}

Session::~Session() { close(); }

void Session::close() {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  changed_.notify_all();
  if (heartbeater_.joinable()) heartbeater_.join();
  if (reader_.joinable()) reader_.join();
}

grpc::Status Session::finish_after_cancel(std::unique_lock<std::mutex>& lock) {
  context_.TryCancel();
  changed_.wait(lock, [this] { return reads_done_; });
  lock.unlock();
  if (reader_.joinable()) reader_.join();
  return stream_->Finish();
}

void Session::read_events() {
  llmrdzv::v1::SessionEvent wire;
  while (stream_->Read(&wire)) {
    if (wire.kind() == llmrdzv::v1::SessionEvent::OPENED) {
      std::lock_guard lock(mutex_);
      opened_ = true;
      changed_.notify_all();
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
    const bool written = stream_->Write(heartbeat);
    lock.lock();
    if (!written) break;  // the stream broke; the reader sees it end too
  }
  const bool lost = !closing_ && !shutdown_seen_;
  const grpc::Status status = finish_after_cancel(lock);
  if (lost) {
    deliver(SessionEvent{SessionEvent::Kind::stream_lost, spec_.round, -1,
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
