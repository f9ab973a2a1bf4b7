// The member's Session stream: opens it for a round, sends heartbeats from one thread, reads
// events on another and hands them to the user's callback; reports a lost stream. Private.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::client::detail {

struct SessionSpec {
  llmrdzv::v1::Scope scope;
  std::string participant_id;
  std::uint64_t round = 0;
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds open_deadline{10'000};  // how long the OPENED reply may take
  std::string endpoint;                             // for messages
};

class Session {
 public:
  // Returns once the daemon answered OPENED; throws RdzvError otherwise.
  Session(llmrdzv::v1::Rendezvous::Stub& stub, SessionSpec spec, SessionCallback on_event);
  ~Session();  // close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::uint64_t round() const { return spec_.round; }
  // Cancels the stream and joins both threads. Idempotent.
  void close();

 private:
  void read_events();
  void send_heartbeats();
  void deliver(const SessionEvent& event);
  // Cancels the stream, waits for the reader, and returns the stream's final status.
  grpc::Status finish_after_cancel(std::unique_lock<std::mutex>& lock);

  SessionSpec spec_;
  SessionCallback on_event_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<llmrdzv::v1::SessionRequest, llmrdzv::v1::SessionEvent>> stream_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool opened_ = false;
  bool reads_done_ = false;
  bool closing_ = false;
  bool shutdown_seen_ = false;
  std::thread reader_;
  std::thread heartbeater_;
};

}  // namespace llmrdzv::client::detail
