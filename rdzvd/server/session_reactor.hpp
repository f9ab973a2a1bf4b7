// The Session stream of one member: reads SessionOpen (which may carry the member's Join), then
// heartbeats and SessionCalls, and feeds them to the core through the same operations the unary
// Join, SessionOpen and blocking store calls use; writes the events the core sends, one write in
// flight at a time. The stream ending without a Leave is reported to the core, which counts it
// as the member's failure; a join or calls still blocked then are cancelled.
//
// Two bounds keep a stream from holding the daemon's resources: a stream that sends no
// SessionOpen within the heartbeat timeout is ended (DEADLINE_EXCEEDED; it needs no token to be
// opened), and one whose client stops reading while its answers pile up is ended once they pass
// max_waiters events or max_bytes bytes (RESOURCE_EXHAUSTED; the member then fails). A stream the
// daemon has decided to end waits for its write in flight at most the heartbeat timeout: a client
// that reads nothing at all would hold it forever, so it is then cancelled.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>

#include "core_host.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::server {

class SessionReactor final : public grpc::ServerBidiReactor<llmrdzv::v1::SessionRequest, llmrdzv::v1::SessionEvent> {
 public:
  SessionReactor(CoreHost& host, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  class Link;

  void open(const llmrdzv::v1::SessionOpen& open);
  void read_next();
  void enqueue(llmrdzv::v1::SessionEvent event);
  void end(const grpc::Status& status);
  void finish_stream(const grpc::Status& status);  // Finish, counted for /metrics
  // With write_mutex_ held, once finish_after_writes_ is set (so once per stream; begin_cancel
  // re-arms): look again after write_grace_.
  void watch_stalled_write();
  // True when no write completed since the watch was armed: cancel_stalled() must then run. When
  // writes did complete (a slow but reading client), the watch is re-armed instead.
  bool begin_cancel();
  bool cancel_stalled();  // true if it had to cancel; the reactor may be gone when it returns

  CoreHost& host_;
  const RpcMetrics::Call call_{"Session"};
  grpc::CallbackServerContext* context_;
  std::shared_ptr<Link> link_;
  llmrdzv::v1::SessionRequest request_;
  bool opened_ = false;  // read side only: the SessionOpen was read

  std::mutex write_mutex_;  // guards the write side and the decision to read on
  // Events waiting to be written, the front one in flight. A list, not a deque: most sessions
  // only ever hold OPENED, and an empty deque already costs ~600 bytes (x thousands of members).
  std::list<llmrdzv::v1::SessionEvent> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t max_queued_events_ = 0;  // from the limits when the stream started
  std::size_t max_queued_bytes_ = 0;
  std::chrono::milliseconds write_grace_{0};  // the heartbeat timeout when the stream started
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> finish_after_writes_;
  std::uint64_t writes_done_ = 0;     // completed writes, for the stall watch
  std::uint64_t writes_watched_ = 0;  // writes_done_ when the watch was armed
  bool cancelling_ = false;  // TryCancel runs outside the lock; Finish (and so OnDone) waits for it
};

}  // namespace llmrdzv::server
