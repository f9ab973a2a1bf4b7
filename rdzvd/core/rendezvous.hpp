// The state of one rendezvous, private to the core: the current round's members, the joiners
// gathering for the next round, and the KV spaces. Core's member functions apply the rules.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "llmrdzv/core/kv_space.hpp"
#include "llmrdzv/core/rank_assignment.hpp"
#include "llmrdzv/core/timer_queue.hpp"
#include "llmrdzv/core/types.hpp"

namespace llmrdzv::core {

struct Member {
  Assignment assignment;
  std::string host;
  std::int32_t local_rank_hint = -1;
  TimePoint last_heartbeat;
  TimerQueue::Key heartbeat_timer{};
  std::uint64_t session_id = 0;  // 0: no session open
};

struct JoinWait {
  JoinCallback done;
  TimerQueue::Key timer{};
};

struct Joiner {
  Candidate candidate;
  TimePoint since;  // its first Join of this gathering
  std::map<std::uint64_t, JoinWait> waits;  // retried Joins of the same participant all complete
};

struct Rendezvous {
  // `owner_usage`: site mode, the byte totals of every rendezvous of the same uid (else null).
  Rendezvous(std::string key_, std::string id_, const Limits& limits, TimerQueue& timers,
             const Clock& clock, std::uint64_t& next_waiter_id, Usage* owner_usage, CoreCounters& counters)
      : key(std::move(key_)),
        id(std::move(id_)),
        kv_context{limits, usage, owner_usage, timers, clock, next_waiter_id, counters},
        global_space(std::make_unique<KvSpace>(kv_context)) {}

  std::string key;  // registry key (site mode: "<uid>/<id>")
  std::string id;   // what clients call it
  std::int32_t min_participants = 0;
  std::int32_t max_participants = 0;
  Millis last_call{0};
  TimePoint created;
  TimePoint last_activity;
  TimerQueue::Key idle_timer{};

  std::uint64_t round = 0;  // the latest completed round
  bool round_open = false;  // false before round 1 and after the current round closed
  std::unordered_map<std::string, Member> members;  // of the current round while open
  // MEMBER_LEFT goes out for the first graceful leave of a round only: at the end of a job every
  // member leaves, and announcing each leave to all the others cost N^2/2 events (2.2 s of rdzvd
  // CPU for 512 ranks; rdzv-bench's leave phase).
  bool leave_announced = false;

  std::map<std::string, Joiner> pending;               // gathering for the next round
  std::unordered_map<std::uint64_t, std::string> join_waiters;  // wait id -> participant id
  std::optional<TimerQueue::Key> last_call_timer;

  // Declared in this order so that the spaces go before the usage they account to.
  Usage usage;
  KvContext kv_context;
  std::unique_ptr<KvSpace> global_space;  // round 0
  std::unique_ptr<KvSpace> round_space;   // the current round while open

  bool elastic() const { return min_participants < max_participants; }
  bool round_active() const { return round_open && !members.empty(); }
};

}  // namespace llmrdzv::core
