// The member's Session stream: opens it for a round (or, with a daemon that speaks
// "session-join", joins and opens in one), sends heartbeats from one thread, reads events on
// another and hands them to the user's callback, carries the store calls that block
// ("session-calls"), and reports a lost stream. Private.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::client::detail {

struct SessionSpec {
  llmrdzv::v1::Scope scope;
  std::string participant_id;
  std::uint64_t round = 0;                       // unused with `join`
  std::optional<llmrdzv::v1::JoinRequest> join;  // join and open in one SessionOpen
  std::chrono::milliseconds heartbeat_interval{1000};  // unless the joined assignment says
  std::chrono::milliseconds open_deadline{10'000};     // how long the OPENED reply may take
  std::string endpoint;                                // for messages
};

class Session {
 public:
  // Starts the stream and sends the SessionOpen; opened() tells how that went.
  Session(llmrdzv::v1::Rendezvous::Stub& stub, SessionSpec spec, SessionCallback on_event);
  ~Session();  // close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Waits for OPENED and starts the heartbeats: OK, or why the session did not open (it is then
  // closed): the stream's final status, or DEADLINE_EXCEEDED after open_deadline.
  grpc::Status opened();
  // After opened(): the round, and with a join what the daemon assigned.
  std::uint64_t round() const { return round_; }
  const llmrdzv::v1::JoinResponse& assignment() const { return assignment_; }

  // What a SessionCall came back with: the unary call's status, and its values when OK.
  struct CallResult {
    grpc::Status status;
    std::vector<std::string> values;
  };
  // Runs `call` (its operation set, its id chosen here) on the stream and waits up to `wait` for
  // its answer: the CALL_DONE, UNAVAILABLE if the stream ended meanwhile, DEADLINE_EXCEEDED if no
  // answer came (the call is then cancelled in the daemon). nullopt when the stream is already over and nothing was sent (the caller may use
  // the unary call instead). Safe from several threads at once.
  std::optional<CallResult> call(llmrdzv::v1::SessionCall call, std::chrono::milliseconds wait);

  // A newer session of this member may replace this one in the daemon (a retried join of the
  // same round): its stream then ends with ABORTED, which is not a loss to report.
  void expect_replacement();
  // Cancels the stream and joins both threads. Idempotent.
  void close();

 private:
  void read_events();
  void send_heartbeats();
  void deliver(const SessionEvent& event);
  bool write(const llmrdzv::v1::SessionRequest& request);
  // Cancels the stream unless it already ended, waits for the reader, returns its final status.
  grpc::Status finish_after_cancel(std::unique_lock<std::mutex>& lock);

  SessionSpec spec_;
  SessionCallback on_event_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<llmrdzv::v1::SessionRequest, llmrdzv::v1::SessionEvent>> stream_;
  bool open_written_ = false;

  std::mutex write_mutex_;  // one writer at a time; no write after Finish
  bool finished_ = false;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool opened_ = false;
  bool reads_done_ = false;
  bool closing_ = false;
  bool shutdown_seen_ = false;
  bool replacement_expected_ = false;
  std::uint64_t round_ = 0;
  llmrdzv::v1::JoinResponse assignment_;
  std::uint64_t next_call_id_ = 1;
  std::unordered_map<std::uint64_t, std::optional<CallResult>> calls_;  // sent, by id: the answer
  std::thread reader_;
  std::thread heartbeater_;
};

}  // namespace llmrdzv::client::detail
