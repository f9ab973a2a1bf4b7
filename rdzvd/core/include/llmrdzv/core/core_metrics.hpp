// What the core counts as things happen (joins, rounds, member failures by cause, limits hit, the
// time from a Join to its assignment), and the snapshot it hands rdzvd's /metrics page together
// with each rendezvous' gauges. Plain data guarded by the core's serialisation like the rest of
// its state; rendering belongs to the server.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "llmrdzv/common/rendezvous_status.hpp"
#include "llmrdzv/metrics/histogram.hpp"

namespace llmrdzv::core {

// Why a member of a round failed: its Session stream ended without a Leave, or it went silent.
enum class MemberFailure { session_closed, heartbeat_timeout };
inline constexpr std::array<const char*, 2> kMemberFailureCauses{"session_closed", "heartbeat_timeout"};

struct CoreCounters {
  std::uint64_t rendezvous_created = 0;
  std::uint64_t joins = 0;             // participants that entered a gathering (retries not counted)
  std::uint64_t rounds_completed = 0;
  std::uint64_t rounds_restarted = 0;  // completed rounds after a rendezvous' first (re-rendezvous)
  std::uint64_t rounds_failed = 0;     // rounds closed by a member's failure
  std::uint64_t member_leaves = 0;     // graceful Leaves of a round's members
  std::array<std::uint64_t, kMemberFailureCauses.size()> member_failures{};
  std::map<std::string, std::uint64_t> limits_hit;  // by limit name (the rdzvd.yaml key under limits:)
  // From a participant's first Join of a gathering to the round that assigns it a rank.
  metrics::Histogram join_seconds{metrics::gathering_seconds_buckets()};

  void member_failed(MemberFailure cause) { ++member_failures[std::size_t(cause)]; }
};

struct RendezvousMetrics {
  std::string owner;  // site mode: the uid the rendezvous belongs to; step mode: empty
  RendezvousStatus status;  // without member details
};

struct CoreMetrics {
  CoreCounters counters;
  std::vector<RendezvousMetrics> rendezvous;  // sorted by owner, then id
  std::int64_t sessions = 0;                  // open Session streams
  std::uint64_t uptime_ms = 0;
};

}  // namespace llmrdzv::core
