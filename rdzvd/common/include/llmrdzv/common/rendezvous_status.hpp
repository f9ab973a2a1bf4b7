// What rdzvd's Status call reports about a rendezvous and its members: one plain definition for the
// core, which fills it, and the client library, which returns it (no protobuf, no core state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmrdzv {

struct MemberStatus {
  std::string participant_id;
  std::int32_t rank = -1;
  std::string host;
  std::int32_t local_rank = -1;
  std::uint64_t last_heartbeat_age_ms = 0;
  bool session_open = false;
};

struct RendezvousStatus {
  std::string rdzv_id;
  std::uint64_t round = 0;
  std::string state;  // gathering | last_call | complete | closed
  std::int32_t min_participants = 0;
  std::int32_t max_participants = 0;
  std::int32_t joined = 0;
  std::int32_t members = 0;
  std::int32_t waiting = 0;
  std::int64_t num_keys = 0;
  std::int64_t kv_bytes = 0;
  std::uint64_t age_ms = 0;
  std::vector<MemberStatus> member_details;  // only in a reply to a Status call with a valid scope
};

// The whole daemon's counts, in every Status reply. In site mode a call without a valid scope gets
// only these: other users' rendezvous ids, states and sizes are theirs.
struct StatusTotals {
  std::int64_t rendezvous = 0;
  std::int64_t members = 0;   // in current rounds
  std::int64_t waiting = 0;   // joiners gathering for a next round
  std::int64_t kv_bytes = 0;
};

}  // namespace llmrdzv
