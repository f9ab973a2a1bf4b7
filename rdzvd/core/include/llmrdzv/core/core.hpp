// The rendezvous daemon's state machine: registry of rendezvous, rounds, membership, ranks,
// liveness, KV spaces, limits and auth, with an injectable clock and no gRPC. Not thread-safe:
// the server serialises every call. Blocking calls complete through callbacks, possibly from
// inside a later call (a Set that wakes a Get) or from tick() (timeouts, last call, heartbeats).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llmrdzv/core/auth.hpp"
#include "llmrdzv/core/clock.hpp"
#include "llmrdzv/core/core_metrics.hpp"
#include "llmrdzv/core/kv_space.hpp"
#include "llmrdzv/core/limits.hpp"
#include "llmrdzv/core/status.hpp"
#include "llmrdzv/core/timer_queue.hpp"
#include "llmrdzv/core/types.hpp"

namespace llmrdzv::core {

// Settings a SIGHUP reload may change.
struct CoreSettings {
  Limits limits;
  Millis heartbeat_interval{1000};
  Millis heartbeat_timeout{10000};
  Millis last_call{3000};                  // elastic: wait after min joined (Join may override)
  Millis join_timeout{600000};             // Join with timeout_ms 0
  Millis wait_timeout{300000};             // Barrier / blocking QueuePop with timeout_ms 0
  Millis rendezvous_idle_timeout{3600000}; // collect a rendezvous nobody touched this long
};

// How many participants a rendezvous takes: MIN:MAX (MIN == MAX: a fixed size).
struct ParticipantRange {
  std::int32_t min = 0;
  std::int32_t max = 0;
};

struct CoreConfig {
  AuthConfig auth;
  CoreSettings settings;
  // Step mode, from the one who started the daemon (slurmstepd knows the step's layout): the
  // participant range of its rendezvous. A Join asking for another is refused, so the first
  // joiner cannot dictate the membership. Unset: the first Join's range holds.
  std::optional<ParticipantRange> step_participants;
};

enum class LogLevel { error, warn, info, debug };
using LogSink = std::function<void(LogLevel, const std::string&)>;

struct Rendezvous;
class KvSpace;

class Core {
 public:
  Core(CoreConfig config, const Clock& clock, LogSink log = {});
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Membership.
  WaiterRef join(const JoinRequest& request, JoinCallback done);
  Status leave(const Scope& scope, const std::string& participant_id);
  // Sessions: the returned id names the session in heartbeat() and close_session().
  Result<std::uint64_t> open_session(const Scope& scope, const std::string& participant_id,
                                     std::uint64_t round, std::shared_ptr<SessionSink> sink);
  void heartbeat(std::uint64_t session_id);
  // The stream ended. Without a Leave first, that is the member's failure.
  void close_session(std::uint64_t session_id);

  // Key-value operations on the space of `round` (0 = rendezvous-wide).
  Status set(const Scope& scope, std::uint64_t round, const std::string& key, std::string value);
  Result<std::int64_t> add(const Scope& scope, std::uint64_t round, const std::string& key, std::int64_t delta);
  Result<std::string> compare_set(const Scope& scope, std::uint64_t round, const std::string& key,
                                  const std::string& expected, std::string desired);
  Result<bool> check(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys);
  Result<bool> delete_key(const Scope& scope, std::uint64_t round, const std::string& key);
  Result<std::int64_t> num_keys(const Scope& scope, std::uint64_t round);
  Result<std::vector<std::string>> list_keys(const Scope& scope, std::uint64_t round);
  Status append(const Scope& scope, std::uint64_t round, const std::string& key, const std::string& value);
  Status multi_set(const Scope& scope, std::uint64_t round, std::vector<std::pair<std::string, std::string>> entries);
  Status queue_push(const Scope& scope, std::uint64_t round, const std::string& key, std::string value);
  Result<std::int64_t> queue_len(const Scope& scope, std::uint64_t round, const std::string& key);
  WaiterRef get(const Scope& scope, std::uint64_t round, const std::string& key, std::uint32_t timeout_ms, KvCallback done);
  WaiterRef multi_get(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys,
                      std::uint32_t timeout_ms, KvCallback done);
  WaiterRef wait(const Scope& scope, std::uint64_t round, const std::vector<std::string>& keys,
                 std::uint32_t timeout_ms, KvCallback done);
  WaiterRef barrier(const Scope& scope, std::uint64_t round, const std::string& key, std::int64_t world_size,
                    std::uint32_t timeout_ms, KvCallback done);
  WaiterRef queue_pop(const Scope& scope, std::uint64_t round, const std::string& key, bool block,
                      std::uint32_t timeout_ms, KvCallback done);

  // A blocked call whose client went away: completes it with CANCELLED if still blocked.
  void cancel(const WaiterRef& waiter);

  // The handshake: the daemon's proof that it holds the token of the rendezvous the client names,
  // for a client that reached it on `port` (see llmrdzv/common/token.hpp).
  // The id's length is checked first, as for every other call: an id over max_id_length is
  // refused without being quoted back.
  Result<HelloAnswer> hello(const HelloRequest& request, std::uint16_t port) const;

  // Without a scope: every rendezvous' counters. With one (ticket checked): that rendezvous with
  // its members.
  Result<DaemonInfo> status(const std::optional<Scope>& scope) const;
  // The daemon's uptime and mode alone (no rendezvous, no auth needed).
  DaemonInfo summary() const;
  // For rdzvd's /metrics: the counters, the open sessions and every rendezvous' gauges (ids and
  // owners included; the page decides what it shows).
  CoreMetrics metrics() const;

  // Timers: the earliest pending deadline, and running everything due now.
  std::optional<TimePoint> next_deadline() const { return timers_.next_deadline(); }
  void tick();

  // SHUTDOWN to every session, UNAVAILABLE to every blocked call; later calls get UNAVAILABLE.
  void shutdown(const std::string& reason);

  void reconfigure(const CoreSettings& settings) { settings_ = settings; }
  const CoreSettings& settings() const { return settings_; }
  TimePoint last_activity() const { return last_activity_; }
  std::size_t rendezvous_count() const { return registry_.size(); }
  // True while some rendezvous has a member in its current round or a joiner waiting for the
  // next, or a session stream is attached: a per-step daemon that is told its step's first node
  // is done (SIGUSR1) waits for this to turn false.
  bool has_live_members() const;
  // has_live_members(), or a call is blocked: rdzvd's --idle-timeout does not run meanwhile (a
  // Join waiting for nodes that start late touches nothing, yet the daemon is needed).
  bool in_use() const;
  // SIGUSR1: the tasks of the daemon's node have exited, so a fixed-size rendezvous (min == max)
  // can no longer gather all its members. Fails its waiting joiners with ABORTED and `reason` at
  // once, and its later Joins likewise. Elastic rendezvous keep gathering: their round may still
  // form without that node.
  void close_fixed_gatherings(const std::string& reason);

  // The daemon's log, also for what the layers around the core see (never tokens).
  void log(LogLevel level, const std::string& message) const;

 private:
  struct SessionRecord {
    std::string rdzv_key;
    std::string participant_id;
    std::uint64_t round = 0;
    std::shared_ptr<SessionSink> sink;
  };

  Status check_id(const char* what, const std::string& id, bool may_be_empty = false) const;
  Status check_timeout(const char* what, std::uint32_t timeout_ms) const;
  Status check_serving() const;
  Result<Rendezvous*> find(const Scope& scope) const;
  Result<Rendezvous*> create_or_find(const JoinRequest& request);
  Result<KvSpace*> space_for(const Scope& scope, std::uint64_t round, std::string* rdzv_key = nullptr);
  template <class Op>
  auto with_space(const Scope& scope, std::uint64_t round, Op op);
  template <class Op>
  WaiterRef blocking(const Scope& scope, std::uint64_t round, const KvCallback& done, Op op);
  void touch(Rendezvous& rdzv);

  void add_join_wait(Rendezvous& rdzv, const std::string& participant_id, Millis timeout,
                     JoinCallback done, WaiterRef& ref);
  void end_join_wait(Rendezvous& rdzv, std::uint64_t id, const Status& status, bool then_advance = true);
  void drop_joiner(Rendezvous& rdzv, const std::string& participant_id, const Status& status);
  void advance(Rendezvous& rdzv);
  void complete_round(Rendezvous& rdzv);
  void close_round(Rendezvous& rdzv, EventKind kind, std::int32_t rank, const std::string& detail);
  void fail_member(Rendezvous& rdzv, const std::string& participant_id, MemberFailure cause,
                   const std::string& reason);
  void check_heartbeat(const std::string& rdzv_key, const std::string& participant_id, std::uint64_t round);
  void check_idle(const std::string& rdzv_key);
  void collect(const std::string& rdzv_key, const Status& reason);
  void notify_members(Rendezvous& rdzv, const SessionEvent& event, const std::string& except = {});
  // Finishes the stream of a session with `status` and forgets it (none such: nothing).
  void end_session(std::uint64_t session_id, const Status& status);
  void detach_session(std::uint64_t session_id);

  CoreSettings settings_;
  Authenticator auth_;
  std::optional<ParticipantRange> step_participants_;
  const Clock& clock_;
  LogSink log_;
  TimerQueue timers_;
  // Mutable: the const checks count the limits they find hit. Before registry_: its rendezvous'
  // spaces count into it.
  mutable CoreCounters counters_;
  // Site mode: per uid, the usage of all its rendezvous (max_bytes_per_user). Declared before
  // registry_ so it outlives the rendezvous, whose spaces give their bytes back as they go.
  std::unordered_map<std::string, Usage> owner_usage_;
  std::unordered_map<std::string, std::unique_ptr<Rendezvous>> registry_;
  std::unordered_map<std::uint64_t, SessionRecord> sessions_;
  std::uint64_t next_waiter_id_ = 1;
  std::uint64_t next_session_id_ = 1;
  TimePoint started_;
  TimePoint last_activity_;
  std::optional<std::string> stopping_;
  std::optional<std::string> closing_fixed_;  // close_fixed_gatherings' reason, once called
};

}  // namespace llmrdzv::core
