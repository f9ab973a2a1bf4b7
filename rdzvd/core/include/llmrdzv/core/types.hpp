// Plain request, reply and event types of the core's API: what the server copies out of and
// into protobuf messages. Blocking operations complete through the callbacks defined here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llmrdzv/common/rendezvous_status.hpp"
#include "llmrdzv/core/status.hpp"

namespace llmrdzv::core {

struct Scope {
  std::string rdzv_id;
  std::string ticket;  // from the handshake (see llmrdzv/common/token.hpp), never the token
};

// The handshake's first half (see llmrdzv/common/token.hpp): who the client wants to reach.
struct HelloRequest {
  std::string rdzv_id;
  std::string key_id;        // the token's public part ("v1.<uid>" for a site token)
  std::string client_nonce;  // kNonceBytes bytes
};

// The daemon's answer: its nonce and its proof over the client's nonce and its listening port.
struct HelloAnswer {
  std::string daemon_nonce;
  std::string proof;
};

struct JoinRequest {
  Scope scope;
  std::string participant_id;
  std::int32_t requested_rank = -1;
  std::string host;
  std::int32_t local_rank = -1;
  std::int32_t min_participants = 0;
  std::int32_t max_participants = 0;
  std::uint32_t last_call_ms = 0;  // 0 = daemon default
  std::uint32_t timeout_ms = 0;    // 0 = daemon default
};

struct Assignment {
  std::uint64_t round = 0;
  std::int32_t rank = -1;
  std::int32_t world_size = 0;
  std::int32_t local_rank = 0;
  std::int32_t local_world_size = 0;
  std::int32_t node_rank = 0;
  std::int32_t num_nodes = 0;
  std::string master_host;
  std::uint32_t heartbeat_interval_ms = 0;
  std::uint32_t heartbeat_timeout_ms = 0;
};

enum class EventKind { opened, member_failed, member_left, round_closed, participant_waiting, shutdown };

struct SessionEvent {
  EventKind kind = EventKind::opened;
  std::uint64_t round = 0;
  std::int32_t rank = -1;
  std::string detail;
};

// Where a member's session events go. The core calls these under its serialisation; an
// implementation must not call back into the core from them.
class SessionSink {
 public:
  virtual ~SessionSink() = default;
  virtual void send(const SessionEvent& event) = 0;
  // The core is done with this session (daemon shutdown, or a newer session replaced it).
  virtual void finish(const Status& status) = 0;
};

using JoinCallback = std::function<void(const Status&, const Assignment&)>;
// KV blocking calls complete with the values they read: Get and QueuePop one, MultiGet one per
// key in request order, Wait and Barrier none.
using KvCallback = std::function<void(const Status&, std::vector<std::string>)>;

// Identifies a blocked call so that the server can cancel it (client cancel or gRPC deadline).
struct WaiterRef {
  std::string rdzv_key;
  std::uint64_t round = 0;
  bool is_join = false;
  std::uint64_t id = 0;  // 0: the call completed before returning, nothing to cancel
};

// The core's part of a Status reply (the server adds its version and features).
struct DaemonInfo {
  std::uint64_t uptime_ms = 0;
  std::string mode;
  StatusTotals totals;
  std::vector<RendezvousStatus> rendezvous;
};

}  // namespace llmrdzv::core
