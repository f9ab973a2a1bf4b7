// Core: the Status report (daemon summary, rendezvous counters, members with a valid scope).
#include "llmrdzv/core/core.hpp"

#include <algorithm>
#include <tuple>

#include "rendezvous.hpp"

namespace llmrdzv::core {
namespace {

std::uint64_t age_ms(TimePoint now, TimePoint since) {
  return std::uint64_t(std::chrono::duration_cast<Millis>(now - since).count());
}

RendezvousStatus summarise(const Rendezvous& rdzv, TimePoint now) {
  RendezvousStatus info;
  info.rdzv_id = rdzv.id;
  info.round = rdzv.round;
  info.state = rdzv.round_active() ? "complete"
               : rdzv.last_call_timer ? "last_call"
               : rdzv.round > 0 && rdzv.pending.empty() ? "closed"
                                                       : "gathering";
  info.min_participants = rdzv.min_participants;
  info.max_participants = rdzv.max_participants;
  info.members = std::int32_t(rdzv.members.size());
  info.joined = rdzv.round_active() ? 0 : std::int32_t(rdzv.pending.size());
  info.waiting = rdzv.round_active() ? std::int32_t(rdzv.pending.size()) : 0;
  info.num_keys = rdzv.usage.keys;
  info.kv_bytes = rdzv.usage.bytes;
  info.age_ms = age_ms(now, rdzv.created);
  return info;
}

}  // namespace

DaemonInfo Core::summary() const {
  DaemonInfo daemon;
  daemon.uptime_ms = age_ms(clock_.now(), started_);
  daemon.mode = mode_name(auth_.mode());
  daemon.totals.rendezvous = std::int64_t(registry_.size());
  for (const auto& [key, rdzv] : registry_) {
    daemon.totals.members += std::int64_t(rdzv->members.size());
    daemon.totals.waiting += std::int64_t(rdzv->pending.size());
    daemon.totals.kv_bytes += rdzv->usage.bytes;
  }
  return daemon;
}

CoreMetrics Core::metrics() const {
  const TimePoint now = clock_.now();
  CoreMetrics metrics;
  metrics.counters = counters_;
  metrics.sessions = std::int64_t(sessions_.size());
  metrics.uptime_ms = age_ms(now, started_);
  metrics.rendezvous.reserve(registry_.size());
  for (const auto& [key, rdzv] : registry_) {
    const std::string owner = auth_.mode() == Mode::site ? auth_.owner_of(key) : std::string();
    metrics.rendezvous.push_back({owner, summarise(*rdzv, now)});
  }
  std::sort(metrics.rendezvous.begin(), metrics.rendezvous.end(), [](const auto& a, const auto& b) {
    return std::tie(a.owner, a.status.rdzv_id) < std::tie(b.owner, b.status.rdzv_id);
  });
  return metrics;
}

Result<DaemonInfo> Core::status(const std::optional<Scope>& scope) const {
  const TimePoint now = clock_.now();
  DaemonInfo daemon = summary();
  if (!scope) {
    if (auth_.mode() == Mode::site) return daemon;  // the totals only: the rest belongs to each rendezvous' user
    for (const auto& [key, rdzv] : registry_) daemon.rendezvous.push_back(summarise(*rdzv, now));
    std::sort(daemon.rendezvous.begin(), daemon.rendezvous.end(),
              [](const auto& a, const auto& b) { return a.rdzv_id < b.rdzv_id; });
    return daemon;
  }
  auto found = find(*scope);
  if (!found.ok()) return found.status();
  const Rendezvous& rdzv = *found.value();
  RendezvousStatus info = summarise(rdzv, now);
  for (const auto& [participant_id, member] : rdzv.members) {
    info.member_details.push_back({participant_id, member.assignment.rank, member.host, member.assignment.local_rank,
                                   age_ms(now, member.last_heartbeat), member.session_id != 0});
  }
  std::sort(info.member_details.begin(), info.member_details.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  daemon.rendezvous.push_back(std::move(info));
  return daemon;
}

}  // namespace llmrdzv::core
