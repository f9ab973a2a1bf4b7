// Core: registry, joins and rounds, sessions and liveness, collection, shutdown (see core.hpp).
// The KV entry points live in core_kv.cpp, the status report in core_status.cpp.
#include "llmrdzv/core/core.hpp"

#include <algorithm>

#include "rendezvous.hpp"

namespace llmrdzv::core {
namespace {

std::string round_label(const Rendezvous& rdzv) {
  return "rdzv=" + rdzv.id + " round=" + std::to_string(rdzv.round);
}

std::uint32_t as_ms(Millis value) { return std::uint32_t(value.count()); }

// The shortest wait before an idle check looks again at a rendezvous kept alive by a blocked call.
constexpr Millis kIdleRecheck{100};

}  // namespace

const char* code_name(Code code) {
  switch (code) {
    case Code::ok: return "OK";
    case Code::not_found: return "NOT_FOUND";
    case Code::permission_denied: return "PERMISSION_DENIED";
    case Code::invalid_argument: return "INVALID_ARGUMENT";
    case Code::resource_exhausted: return "RESOURCE_EXHAUSTED";
    case Code::failed_precondition: return "FAILED_PRECONDITION";
    case Code::aborted: return "ABORTED";
    case Code::deadline_exceeded: return "DEADLINE_EXCEEDED";
    case Code::unavailable: return "UNAVAILABLE";
    case Code::cancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

Core::Core(CoreConfig config, const Clock& clock, LogSink log)
    : settings_(config.settings),
      auth_(std::move(config.auth)),
      step_participants_(config.step_participants),
      clock_(clock),
      log_(std::move(log)),
      started_(clock.now()),
      last_activity_(started_) {}

Core::~Core() {
  // Spaces and joins fail their waiters as they go; nobody should be left hanging.
  if (!stopping_) shutdown("rdzvd core destroyed");
}

void Core::log(LogLevel level, const std::string& message) const {
  if (log_) log_(level, message);
}

Status Core::check_serving() const {
  if (stopping_) return error(Code::unavailable, "rdzvd is shutting down: " + *stopping_);
  return Status::Ok();
}

Status Core::check_id(const char* what, const std::string& id, bool may_be_empty) const {
  if (id.empty() && !may_be_empty) return error(Code::invalid_argument, std::string(what) + " is empty");
  if (id.size() > settings_.limits.max_id_length)
    return limit_exceeded(counters_, "max_id_length", settings_.limits.max_id_length,
                          std::string(what) + " of " + std::to_string(id.size()) + " bytes");
  return Status::Ok();
}

Result<HelloAnswer> Core::hello(const HelloRequest& request, std::uint16_t port) const {
  if (auto status = check_id("rdzv_id", request.rdzv_id); !status.ok()) return status;
  return auth_.hello(request, port);
}

Status Core::check_timeout(const char* what, std::uint32_t timeout_ms) const {
  if (timeout_ms > settings_.limits.max_timeout_ms)
    return limit_exceeded(counters_, "max_timeout_ms", settings_.limits.max_timeout_ms,
                          std::string(what) + "=" + std::to_string(timeout_ms));
  return Status::Ok();
}

Result<Rendezvous*> Core::find(const Scope& scope) const {
  if (auto status = check_serving(); !status.ok()) return status;
  if (auto status = check_id("rdzv_id", scope.rdzv_id); !status.ok()) return status;
  auto key = auth_.authorize(scope);
  if (!key.ok()) return key.status();
  const auto it = registry_.find(key.value());
  if (it == registry_.end())
    return error(Code::not_found, "unknown rendezvous '" + scope.rdzv_id + "' (no Join yet, or collected)");
  return it->second.get();
}

void Core::touch(Rendezvous& rdzv) {
  rdzv.last_activity = last_activity_ = clock_.now();
}

Result<Rendezvous*> Core::create_or_find(const JoinRequest& request) {
  if (auto status = check_serving(); !status.ok()) return status;
  for (auto [what, id] : {std::pair{"rdzv_id", &request.scope.rdzv_id},
                          std::pair{"participant_id", &request.participant_id}, std::pair{"host", &request.host}})
    if (auto status = check_id(what, *id); !status.ok()) return status;
  if (request.min_participants < 1 || request.max_participants < request.min_participants)
    return error(Code::invalid_argument, "need 1 <= min_participants <= max_participants, got " +
                                             std::to_string(request.min_participants) + ":" +
                                             std::to_string(request.max_participants));
  if (std::uint32_t(request.max_participants) > settings_.limits.max_participants)
    return limit_exceeded(counters_, "max_participants", settings_.limits.max_participants,
                          "max_participants=" + std::to_string(request.max_participants));
  if (request.requested_rank < -1 || request.requested_rank >= request.max_participants)
    return error(Code::invalid_argument, "requested_rank " + std::to_string(request.requested_rank) +
                                             " outside -1.." + std::to_string(request.max_participants - 1));
  for (auto [what, timeout] : {std::pair{"timeout_ms", request.timeout_ms}, std::pair{"last_call_ms", request.last_call_ms}})
    if (auto status = check_timeout(what, timeout); !status.ok()) return status;
  auto key = auth_.authorize(request.scope);
  if (!key.ok()) return key.status();
  if (step_participants_ && (request.min_participants != step_participants_->min ||
                             request.max_participants != step_participants_->max))
    return error(Code::failed_precondition,
                 "rendezvous '" + request.scope.rdzv_id + "' is for " + std::to_string(step_participants_->min) + ":" +
                     std::to_string(step_participants_->max) +
                     " participants (the step's layout, set when the daemon started); this Join asks for " +
                     std::to_string(request.min_participants) + ":" + std::to_string(request.max_participants));

  if (auto it = registry_.find(key.value()); it != registry_.end()) {
    Rendezvous& rdzv = *it->second;
    if (rdzv.min_participants != request.min_participants || rdzv.max_participants != request.max_participants)
      return error(Code::failed_precondition,
                   "rendezvous '" + rdzv.id + "' has " + std::to_string(rdzv.min_participants) + ":" +
                       std::to_string(rdzv.max_participants) + " participants, this Join asks for " +
                       std::to_string(request.min_participants) + ":" + std::to_string(request.max_participants));
    return &rdzv;
  }
  if (registry_.size() >= settings_.limits.max_rendezvous)
    return limit_exceeded(counters_, "max_rendezvous", settings_.limits.max_rendezvous, "the daemon holds that many rendezvous");
  if (auth_.mode() == Mode::site) {  // one user's rendezvous must not crowd out everybody else's
    const std::string owner = auth_.owner_of(key.value());
    const auto owned = std::count_if(registry_.begin(), registry_.end(),
                                     [&](const auto& entry) { return auth_.owner_of(entry.first) == owner; });
    if (std::uint32_t(owned) >= settings_.limits.max_rendezvous_per_user)
      return limit_exceeded(counters_, "max_rendezvous_per_user", settings_.limits.max_rendezvous_per_user,
                            "uid " + owner + " holds that many rendezvous");
  }
  Usage* owner_usage = auth_.mode() == Mode::site ? &owner_usage_[auth_.owner_of(key.value())] : nullptr;
  auto rdzv = std::make_unique<Rendezvous>(key.value(), request.scope.rdzv_id, settings_.limits, timers_,
                                           clock_, next_waiter_id_, owner_usage, counters_);
  rdzv->min_participants = request.min_participants;
  rdzv->max_participants = request.max_participants;
  rdzv->last_call = request.last_call_ms ? Millis(request.last_call_ms) : settings_.last_call;
  rdzv->created = clock_.now();
  Rendezvous* raw = rdzv.get();
  registry_.emplace(raw->key, std::move(rdzv));
  ++counters_.rendezvous_created;
  raw->idle_timer = timers_.schedule(clock_.now() + settings_.rendezvous_idle_timeout,
                                     [this, key = raw->key] { check_idle(key); });
  log(LogLevel::info, "rdzv=" + raw->id + " created, participants " + std::to_string(raw->min_participants) +
                          ":" + std::to_string(raw->max_participants));
  return raw;
}

WaiterRef Core::join(const JoinRequest& request, JoinCallback done) {
  WaiterRef ref;
  auto found = create_or_find(request);
  if (!found.ok()) {
    done(found.status(), {});
    return ref;
  }
  Rendezvous& rdzv = *found.value();
  touch(rdzv);
  ref.rdzv_key = rdzv.key;
  ref.is_join = true;
  if (rdzv.round_open) {
    if (auto member = rdzv.members.find(request.participant_id); member != rdzv.members.end()) {
      done(Status::Ok(), member->second.assignment);  // a retried Join of this round
      return ref;
    }
  }
  const Millis timeout = request.timeout_ms ? Millis(request.timeout_ms) : settings_.join_timeout;
  if (rdzv.usage.waiters >= settings_.limits.max_waiters) {
    done(limit_exceeded(counters_, "max_waiters", settings_.limits.max_waiters, "too many blocked calls on this rendezvous"), {});
    return ref;
  }
  if (closing_fixed_ && !rdzv.elastic()) {
    done(error(Code::aborted, *closing_fixed_), {});
    return ref;
  }
  if (rdzv.pending.contains(request.participant_id)) {
    add_join_wait(rdzv, request.participant_id, timeout, std::move(done), ref);
    return ref;
  }
  if (rdzv.pending.size() >= std::size_t(rdzv.max_participants)) {
    done(error(Code::resource_exhausted, "rendezvous '" + rdzv.id + "' already has max_participants (" +
                                             std::to_string(rdzv.max_participants) + ") joiners waiting"),
         {});
    return ref;
  }
  Joiner& joiner = rdzv.pending[request.participant_id];
  joiner.candidate = {request.participant_id, request.requested_rank, request.host, request.local_rank};
  joiner.since = clock_.now();
  ++counters_.joins;
  log(LogLevel::debug, round_label(rdzv) + " join by " + request.participant_id + " (" +
                           std::to_string(rdzv.pending.size()) + " gathered)");
  add_join_wait(rdzv, request.participant_id, timeout, std::move(done), ref);
  if (rdzv.round_active() && rdzv.elastic())
    notify_members(rdzv, {EventKind::participant_waiting, rdzv.round, -1,
                          std::to_string(rdzv.pending.size()) + " participant(s) waiting for the next round"});
  advance(rdzv);
  return ref;
}

void Core::add_join_wait(Rendezvous& rdzv, const std::string& participant_id, Millis timeout,
                         JoinCallback done, WaiterRef& ref) {
  const std::uint64_t id = next_waiter_id_++;
  JoinWait& wait = rdzv.pending.at(participant_id).waits[id];
  wait.done = std::move(done);
  wait.timer = timers_.schedule(clock_.now() + timeout, [this, key = rdzv.key, id, timeout] {
    auto it = registry_.find(key);
    if (it == registry_.end()) return;
    end_join_wait(*it->second, id,
                  error(Code::deadline_exceeded, "round did not complete within " +
                                                     std::to_string(timeout.count()) + " ms"));
  });
  rdzv.join_waiters.emplace(id, participant_id);
  ++rdzv.usage.waiters;
  ref.id = id;
}

// One blocked Join ends without a round (timeout or cancel). A joiner with no Join left blocked
// is gone: it must not be counted into the round.
void Core::end_join_wait(Rendezvous& rdzv, std::uint64_t id, const Status& status, bool then_advance) {
  const auto owner = rdzv.join_waiters.find(id);
  if (owner == rdzv.join_waiters.end()) return;
  const std::string participant_id = owner->second;
  rdzv.join_waiters.erase(owner);
  --rdzv.usage.waiters;
  Joiner& joiner = rdzv.pending.at(participant_id);
  JoinWait wait = std::move(joiner.waits.at(id));
  joiner.waits.erase(id);
  timers_.cancel(wait.timer);
  if (joiner.waits.empty()) {
    rdzv.pending.erase(participant_id);
    log(LogLevel::debug, round_label(rdzv) + " joiner " + participant_id + " gave up: " + status.message);
  }
  wait.done(status, {});
  if (then_advance) advance(rdzv);
}

void Core::drop_joiner(Rendezvous& rdzv, const std::string& participant_id, const Status& status) {
  const auto joiner = rdzv.pending.find(participant_id);
  if (joiner == rdzv.pending.end()) return;
  std::vector<std::uint64_t> ids;
  for (const auto& [id, wait] : joiner->second.waits) ids.push_back(id);
  for (const std::uint64_t id : ids) end_join_wait(rdzv, id, status);
}

// Moves the gathering forward: completes the round at max, runs last call in elastic mode.
void Core::advance(Rendezvous& rdzv) {
  if (rdzv.round_active()) return;  // late joiners wait for the current round to end
  const std::size_t gathered = rdzv.pending.size();
  if (gathered >= std::size_t(rdzv.max_participants)) {
    complete_round(rdzv);
    return;
  }
  const bool min_reached = gathered >= std::size_t(rdzv.min_participants);
  if (min_reached && !rdzv.last_call_timer) {
    rdzv.last_call_timer = timers_.schedule(clock_.now() + rdzv.last_call, [this, key = rdzv.key] {
      auto it = registry_.find(key);
      if (it == registry_.end()) return;
      it->second->last_call_timer.reset();
      complete_round(*it->second);
    });
    log(LogLevel::info, round_label(rdzv) + " last call: " + std::to_string(gathered) + " gathered, closing in " +
                            std::to_string(rdzv.last_call.count()) + " ms");
  } else if (!min_reached && rdzv.last_call_timer) {
    timers_.cancel(*rdzv.last_call_timer);
    rdzv.last_call_timer.reset();
  }
}

void Core::complete_round(Rendezvous& rdzv) {
  if (rdzv.last_call_timer) {
    timers_.cancel(*rdzv.last_call_timer);
    rdzv.last_call_timer.reset();
  }
  if (rdzv.round_open) close_round(rdzv, EventKind::round_closed, -1, "superseded by the next round");
  std::vector<Candidate> candidates;
  candidates.reserve(rdzv.pending.size());
  for (const auto& [id, joiner] : rdzv.pending) candidates.push_back(joiner.candidate);
  const RoundLayout layout = assign_ranks(candidates);

  ++rdzv.round;
  ++counters_.rounds_completed;
  if (rdzv.round > 1) ++counters_.rounds_restarted;
  rdzv.round_open = true;
  rdzv.leave_announced = false;
  rdzv.round_space = std::make_unique<KvSpace>(rdzv.kv_context);
  const TimePoint now = clock_.now();
  std::vector<std::pair<JoinCallback, const Assignment*>> completions;
  std::size_t index = 0;
  for (auto& [participant_id, joiner] : rdzv.pending) {
    const Placement& place = layout.placements[index++];
    Member& member = rdzv.members[participant_id];
    member.assignment = {rdzv.round,
                         place.rank,
                         std::int32_t(candidates.size()),
                         place.local_rank,
                         place.local_world_size,
                         place.node_rank,
                         layout.num_nodes,
                         layout.master_host,
                         as_ms(settings_.heartbeat_interval),
                         as_ms(settings_.heartbeat_timeout)};
    member.host = joiner.candidate.host;
    member.local_rank_hint = joiner.candidate.local_rank;
    member.last_heartbeat = now;
    counters_.join_seconds.observe(std::chrono::duration<double>(now - joiner.since).count());
    member.heartbeat_timer = timers_.schedule(
        now + settings_.heartbeat_timeout,
        [this, key = rdzv.key, participant_id = participant_id, round = rdzv.round] {
          check_heartbeat(key, participant_id, round);
        });
    for (auto& [id, wait] : joiner.waits) {
      timers_.cancel(wait.timer);
      completions.emplace_back(std::move(wait.done), &member.assignment);
    }
  }
  rdzv.usage.waiters -= std::uint32_t(rdzv.join_waiters.size());
  rdzv.join_waiters.clear();
  rdzv.pending.clear();
  log(LogLevel::info, round_label(rdzv) + " complete: world_size=" + std::to_string(candidates.size()) +
                          " nodes=" + std::to_string(layout.num_nodes) + " master=" + layout.master_host);
  for (auto& [done, assignment] : completions) done(Status::Ok(), *assignment);
}

void Core::close_round(Rendezvous& rdzv, EventKind kind, std::int32_t rank, const std::string& detail) {
  const std::string reason = "round " + std::to_string(rdzv.round) + " of rendezvous '" + rdzv.id +
                             "' closed: " + detail;
  log(kind == EventKind::member_failed ? LogLevel::warn : LogLevel::info,
      round_label(rdzv) + " closed: " + detail);
  notify_members(rdzv, {kind, rdzv.round, rank, detail});
  for (auto& [id, member] : rdzv.members) timers_.cancel(member.heartbeat_timer);
  rdzv.members.clear();
  rdzv.round_open = false;
  if (rdzv.round_space) {
    rdzv.round_space->set_closing_status(error(Code::aborted, reason));
    rdzv.round_space.reset();
  }
}

void Core::fail_member(Rendezvous& rdzv, const std::string& participant_id, MemberFailure cause,
                       const std::string& reason) {
  const auto it = rdzv.members.find(participant_id);
  if (it == rdzv.members.end()) return;
  counters_.member_failed(cause);
  ++counters_.rounds_failed;
  const std::int32_t rank = it->second.assignment.rank;
  const std::uint64_t session = it->second.session_id;
  timers_.cancel(it->second.heartbeat_timer);
  rdzv.members.erase(it);
  // A member declared failed while its stream is up (it went silent) is told so and its stream
  // ended: otherwise it would go on heart-beating into a round it is no longer in.
  end_session(session, error(Code::aborted, "rank " + std::to_string(rank) + " (" + participant_id + ") of round " +
                                                std::to_string(rdzv.round) + " of rendezvous '" + rdzv.id +
                                                "' declared failed: " + reason));
  close_round(rdzv, EventKind::member_failed, rank,
              "rank " + std::to_string(rank) + " (" + participant_id + ") failed: " + reason);
  advance(rdzv);
}

void Core::check_heartbeat(const std::string& rdzv_key, const std::string& participant_id, std::uint64_t round) {
  const auto it = registry_.find(rdzv_key);
  if (it == registry_.end()) return;
  Rendezvous& rdzv = *it->second;
  if (!rdzv.round_open || rdzv.round != round) return;
  const auto member = rdzv.members.find(participant_id);
  if (member == rdzv.members.end()) return;
  // The timeout the member was told when its round completed: a SIGHUP that changes the setting
  // applies to later rounds, never to members heart-beating at the old interval.
  const Millis timeout{member->second.assignment.heartbeat_timeout_ms};
  const TimePoint due = member->second.last_heartbeat + timeout;
  if (clock_.now() >= due) {
    fail_member(rdzv, participant_id, MemberFailure::heartbeat_timeout,
                "no heartbeat for " + std::to_string(timeout.count()) + " ms");
    return;
  }
  member->second.heartbeat_timer = timers_.schedule(due, [this, rdzv_key, participant_id, round] {
    check_heartbeat(rdzv_key, participant_id, round);
  });
}

bool Core::has_live_members() const {
  if (!sessions_.empty()) return true;
  for (const auto& [key, rdzv] : registry_) {
    if (rdzv->round_active() || !rdzv->pending.empty()) return true;
  }
  return false;
}

bool Core::in_use() const {
  return has_live_members() ||
         std::any_of(registry_.begin(), registry_.end(), [](const auto& entry) { return entry.second->usage.waiters > 0; });
}

void Core::close_fixed_gatherings(const std::string& reason) {
  closing_fixed_ = reason;
  for (const auto& [key, rdzv] : registry_) {
    if (rdzv->elastic() || rdzv->pending.empty()) continue;
    log(LogLevel::warn, round_label(*rdzv) + ": failing " + std::to_string(rdzv->pending.size()) +
                            " waiting joiner(s): " + reason);
    std::vector<std::string> joiners;
    for (const auto& [participant_id, joiner] : rdzv->pending) joiners.push_back(participant_id);
    for (const auto& participant_id : joiners) drop_joiner(*rdzv, participant_id, error(Code::aborted, reason));
  }
}

Status Core::leave(const Scope& scope, const std::string& participant_id) {
  if (auto status = check_id("participant_id", participant_id); !status.ok()) return status;
  auto found = find(scope);
  if (!found.ok()) return found.status();
  Rendezvous& rdzv = *found.value();
  touch(rdzv);
  drop_joiner(rdzv, participant_id, error(Code::cancelled, "participant " + participant_id + " left"));
  const auto it = rdzv.round_open ? rdzv.members.find(participant_id) : rdzv.members.end();
  if (it != rdzv.members.end()) {
    const std::int32_t rank = it->second.assignment.rank;
    timers_.cancel(it->second.heartbeat_timer);
    detach_session(it->second.session_id);
    rdzv.members.erase(it);
    ++counters_.member_leaves;
    log(LogLevel::info, round_label(rdzv) + " rank=" + std::to_string(rank) + " left");
    if (rdzv.members.empty()) {
      close_round(rdzv, EventKind::round_closed, -1, "every member left");
      if (rdzv.pending.empty()) {
        collect(rdzv.key, error(Code::aborted, "rendezvous '" + rdzv.id + "' ended: every member left"));
        return Status::Ok();
      }
      advance(rdzv);
    } else if (!std::exchange(rdzv.leave_announced, true)) {
      notify_members(rdzv, {EventKind::member_left, rdzv.round, rank,
                            participant_id + " left (the first of this round; later leaves are not announced)"});
    }
  }
  return Status::Ok();
}

Result<std::uint64_t> Core::open_session(const Scope& scope, const std::string& participant_id,
                                         std::uint64_t round, std::shared_ptr<SessionSink> sink) {
  if (auto status = check_id("participant_id", participant_id); !status.ok()) return status;
  auto found = find(scope);
  if (!found.ok()) return found.status();
  Rendezvous& rdzv = *found.value();
  touch(rdzv);
  if (round == 0 || round > rdzv.round)
    return error(Code::invalid_argument, "round " + std::to_string(round) + " has not completed (latest " +
                                             std::to_string(rdzv.round) + ")");
  if (round < rdzv.round || !rdzv.round_open)
    return error(Code::aborted, "round " + std::to_string(round) + " is closed");
  const auto member = rdzv.members.find(participant_id);
  if (member == rdzv.members.end())
    return error(Code::failed_precondition,
                 participant_id + " is not a member of round " + std::to_string(round));
  end_session(member->second.session_id, error(Code::aborted, "replaced by a newer session of the same member"));
  const std::uint64_t id = next_session_id_++;
  sessions_.emplace(id, SessionRecord{rdzv.key, participant_id, round, sink});
  member->second.session_id = id;
  member->second.last_heartbeat = clock_.now();
  sink->send({EventKind::opened, round, member->second.assignment.rank, "session open"});
  return id;
}

void Core::heartbeat(std::uint64_t session_id) {
  const auto record = sessions_.find(session_id);
  if (record == sessions_.end()) return;
  const auto rdzv = registry_.find(record->second.rdzv_key);
  if (rdzv == registry_.end()) return;
  touch(*rdzv->second);
  const auto member = rdzv->second->members.find(record->second.participant_id);
  if (member != rdzv->second->members.end() && member->second.session_id == session_id)
    member->second.last_heartbeat = clock_.now();
}

void Core::close_session(std::uint64_t session_id) {
  const auto record = sessions_.find(session_id);
  if (record == sessions_.end()) return;
  const SessionRecord closed = std::move(record->second);
  sessions_.erase(record);
  const auto rdzv = registry_.find(closed.rdzv_key);
  if (rdzv == registry_.end()) return;
  const auto member = rdzv->second->members.find(closed.participant_id);
  if (member != rdzv->second->members.end() && member->second.session_id == session_id) {
    member->second.session_id = 0;
    fail_member(*rdzv->second, closed.participant_id, MemberFailure::session_closed,
                "session closed without Leave");
  }
}

void Core::end_session(std::uint64_t session_id, const Status& status) {
  const auto record = sessions_.find(session_id);
  if (record == sessions_.end()) return;
  record->second.sink->finish(status);
  sessions_.erase(record);
}

void Core::detach_session(std::uint64_t session_id) {
  // The stream stays up until the client ends it; it no longer speaks for a member.
  if (auto record = sessions_.find(session_id); record != sessions_.end()) record->second.round = 0;
}

void Core::notify_members(Rendezvous& rdzv, const SessionEvent& event, const std::string& except) {
  for (const auto& [participant_id, member] : rdzv.members) {
    if (participant_id == except || member.session_id == 0) continue;
    if (auto record = sessions_.find(member.session_id); record != sessions_.end()) record->second.sink->send(event);
  }
}

void Core::check_idle(const std::string& rdzv_key) {
  const auto it = registry_.find(rdzv_key);
  if (it == registry_.end()) return;
  Rendezvous& rdzv = *it->second;
  const TimePoint due = rdzv.last_activity + settings_.rendezvous_idle_timeout;
  const TimePoint now = clock_.now();
  if (now >= due && rdzv.usage.waiters == 0) {
    log(LogLevel::info, round_label(rdzv) + " collected after " +
                            std::to_string(settings_.rendezvous_idle_timeout.count()) + " ms idle");
    collect(rdzv_key, error(Code::aborted, "rendezvous '" + rdzv.id + "' was idle and got collected"));
    return;
  }
  // A blocked call is activity of a kind: look again a little later (a tenth of the timeout, at
  // least kIdleRecheck, so a tiny timeout cannot make the timer spin).
  const TimePoint next = now < due ? due : now + std::max(settings_.rendezvous_idle_timeout / 10, kIdleRecheck);
  rdzv.idle_timer = timers_.schedule(next, [this, rdzv_key] { check_idle(rdzv_key); });
}

void Core::collect(const std::string& rdzv_key, const Status& reason) {
  const auto it = registry_.find(rdzv_key);
  if (it == registry_.end()) return;
  std::unique_ptr<Rendezvous> rdzv = std::move(it->second);
  registry_.erase(it);
  timers_.cancel(rdzv->idle_timer);
  if (rdzv->last_call_timer) timers_.cancel(*rdzv->last_call_timer);
  for (auto& [id, member] : rdzv->members) {
    timers_.cancel(member.heartbeat_timer);
    detach_session(member.session_id);
  }
  std::vector<std::uint64_t> join_ids;
  for (const auto& [id, participant_id] : rdzv->join_waiters) join_ids.push_back(id);
  for (const std::uint64_t id : join_ids) end_join_wait(*rdzv, id, reason, false);
  if (rdzv->round_space) rdzv->round_space->set_closing_status(reason);
  rdzv->global_space->set_closing_status(reason);
  log(LogLevel::info, "rdzv=" + rdzv->id + " removed");
  // Destroying the spaces completes their waiters with `reason`.
}

void Core::cancel(const WaiterRef& waiter) {
  if (waiter.id == 0) return;
  const auto it = registry_.find(waiter.rdzv_key);
  if (it == registry_.end()) return;
  Rendezvous& rdzv = *it->second;
  const Status cancelled = error(Code::cancelled, "cancelled by the client");
  if (waiter.is_join) {
    end_join_wait(rdzv, waiter.id, cancelled);
  } else if (waiter.round == 0) {
    rdzv.global_space->cancel(waiter.id, cancelled);
  } else if (rdzv.round_space && waiter.round == rdzv.round) {
    rdzv.round_space->cancel(waiter.id, cancelled);
  }
}

void Core::tick() { timers_.run_due(clock_.now()); }

void Core::shutdown(const std::string& reason) {
  if (stopping_) return;
  stopping_ = reason;
  log(LogLevel::info, "shutting down: " + reason);
  const Status unavailable = error(Code::unavailable, "rdzvd is shutting down: " + reason);
  for (auto& [id, record] : sessions_) {
    record.sink->send({EventKind::shutdown, record.round, -1, "rdzvd is shutting down: " + reason});
    record.sink->finish(unavailable);
  }
  sessions_.clear();
  std::vector<std::string> keys;
  for (const auto& [key, rdzv] : registry_) keys.push_back(key);
  for (const auto& key : keys) collect(key, unavailable);
}

}  // namespace llmrdzv::core
