// Plain value types the rendezvous client returns: a round's assignment, session events and the
// daemon's status. They mirror the wire messages without exposing protobuf.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/common/rendezvous_status.hpp"

namespace llmrdzv::client {

struct Assignment {
  std::uint64_t round = 0;
  std::int32_t rank = -1;
  std::int32_t world_size = 0;
  std::int32_t local_rank = -1;
  std::int32_t local_world_size = 0;
  std::int32_t node_rank = -1;
  std::int32_t num_nodes = 0;
  std::string master_host;
  std::chrono::milliseconds heartbeat_interval{0};
  std::chrono::milliseconds heartbeat_timeout{0};
};

struct SessionEvent {
  enum class Kind {
    member_failed,        // `rank` died or went silent: the round is closed
    member_left,          // `rank` left gracefully: the first of the round (later leaves are not told)
    round_closed,         // the round ended for another reason (see detail)
    participant_waiting,  // an elastic rendezvous has a joiner waiting for the next round
    shutdown,             // rdzvd is stopping
    stream_lost,          // the session stream ended without a shutdown notice (detail: why)
  };
  Kind kind = Kind::round_closed;
  std::uint64_t round = 0;
  std::int32_t rank = -1;
  std::string detail;
};

// "member_failed", "member_left", ...
std::string_view event_kind_name(SessionEvent::Kind kind);

// The daemon's Status reply (RendezvousStatus: llmrdzv/common/rendezvous_status.hpp, shared with rdzvd's core).
struct DaemonStatus {
  std::string version;
  std::uint64_t uptime_ms = 0;
  std::string mode;
  std::vector<RendezvousStatus> rendezvous;  // site mode without a scope: none (see StatusTotals)
  StatusTotals totals;
};

}  // namespace llmrdzv::client
