// Renders /metrics (see metrics_page.hpp).
#include "metrics_page.hpp"

#include <unistd.h>

#include <array>
#include <fstream>
#include <functional>
#include <map>

#include "llmrdzv/metrics/exposition.hpp"

namespace llmrdzv::server {
namespace {

using metrics::Exposition;
using metrics::Labels;

constexpr std::array<const char*, 4> kStates{"gathering", "last_call", "complete", "closed"};

void single(Exposition& out, const char* name, const char* type, const char* help, double value) {
  out.family(name, type, help);
  out.sample(name, value);
}

void daemon_families(Exposition& out, const core::CoreMetrics& core, const PageInfo& info) {
  out.family("rdzvd_build_info", "gauge", "rdzvd's version and mode (always 1).");
  out.sample("rdzvd_build_info", {{"version", info.version}, {"mode", info.mode}}, 1);
  single(out, "rdzvd_uptime_seconds", "gauge", "Seconds since rdzvd started.", double(core.uptime_ms) / 1000.0);
  single(out, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.",
         info.start_time_seconds);
  if (info.resident_bytes)
    single(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           double(*info.resident_bytes));
  single(out, "rdzvd_calls_refused_unauthenticated_total", "counter",
         "Calls refused from their headers, before their message was read: no valid credential.",
         double(info.calls_refused_unauthenticated));
  single(out, "rdzvd_connections_evicted_total", "counter",
         "Connections shut down before they said Hello with the token: their peer opened more than max_unauthenticated_per_peer.",
         double(info.connections_evicted));
}

void gauge_families(Exposition& out, const core::CoreMetrics& core, const PageInfo& info) {
  std::map<std::string, double> by_state;
  std::map<std::string, double> by_owner;
  double members = 0, waiting = 0, keys = 0, bytes = 0;
  for (const auto& [owner, status] : core.rendezvous) {
    ++by_state[status.state];
    ++by_owner[owner];
    members += status.members;
    waiting += status.joined + status.waiting;
    keys += double(status.num_keys);
    bytes += double(status.kv_bytes);
  }
  out.family("rdzvd_rendezvous", "gauge", "Live rendezvous by state (gathering, last_call, complete, closed).");
  for (const char* state : kStates) out.sample("rdzvd_rendezvous", {{"state", state}}, by_state[state]);
  single(out, "rdzvd_members", "gauge", "Members of the current rounds of all rendezvous.", members);
  single(out, "rdzvd_waiting_participants", "gauge", "Participants gathering for a next round.", waiting);
  single(out, "rdzvd_sessions", "gauge", "Open Session streams.", double(core.sessions));
  single(out, "rdzvd_kv_keys", "gauge", "Keys and non-empty queues in all key-value spaces.", keys);
  single(out, "rdzvd_kv_bytes", "gauge", "Key and value bytes in all key-value spaces.", bytes);
  if (info.mode == "site") {
    out.family("rdzvd_user_rendezvous", "gauge", "Live rendezvous per user (uid).");
    for (const auto& [owner, count] : by_owner) out.sample("rdzvd_user_rendezvous", {{"uid", owner}}, count);
  }
}

// metrics_expose_ids: the same gauges per rendezvous, labelled with its id (and uid in site mode).
void per_rendezvous_families(Exposition& out, const core::CoreMetrics& core) {
  using Field = std::function<double(const RendezvousStatus&)>;
  const std::array<std::tuple<const char*, const char*, Field>, 5> families{{
      {"rdzvd_rendezvous_members", "Members of the rendezvous' current round.",
       [](const RendezvousStatus& s) { return double(s.members); }},
      {"rdzvd_rendezvous_waiting_participants", "Participants gathering for the rendezvous' next round.",
       [](const RendezvousStatus& s) { return double(s.joined + s.waiting); }},
      {"rdzvd_rendezvous_round", "The rendezvous' latest completed round.",
       [](const RendezvousStatus& s) { return double(s.round); }},
      {"rdzvd_rendezvous_kv_keys", "Keys and non-empty queues of the rendezvous.",
       [](const RendezvousStatus& s) { return double(s.num_keys); }},
      {"rdzvd_rendezvous_kv_bytes", "Key and value bytes of the rendezvous.",
       [](const RendezvousStatus& s) { return double(s.kv_bytes); }},
  }};
  for (const auto& [name, help, field] : families) {
    out.family(name, "gauge", help);
    for (const auto& [owner, status] : core.rendezvous) {
      Labels labels{{"rdzv_id", status.rdzv_id}};
      if (!owner.empty()) labels.emplace_back("uid", owner);
      out.sample(name, labels, field(status));
    }
  }
}

void counter_families(Exposition& out, const core::CoreCounters& counters) {
  single(out, "rdzvd_rendezvous_created_total", "counter", "Rendezvous created by a first Join.",
         double(counters.rendezvous_created));
  single(out, "rdzvd_joins_total", "counter", "Participants that joined a gathering (retried Joins not counted).",
         double(counters.joins));
  single(out, "rdzvd_rounds_completed_total", "counter", "Rounds completed (ranks assigned).",
         double(counters.rounds_completed));
  single(out, "rdzvd_rounds_restarted_total", "counter",
         "Rounds completed after a rendezvous' first one (re-rendezvous after a failure or a change).",
         double(counters.rounds_restarted));
  single(out, "rdzvd_rounds_failed_total", "counter", "Rounds closed by a member's failure.",
         double(counters.rounds_failed));
  single(out, "rdzvd_member_leaves_total", "counter", "Members that left their round with Leave.",
         double(counters.member_leaves));
  out.family("rdzvd_member_failures_total", "counter",
             "Members that failed, by cause (session_closed: stream ended without Leave; heartbeat_timeout).");
  for (std::size_t i = 0; i < core::kMemberFailureCauses.size(); ++i)
    out.sample("rdzvd_member_failures_total", {{"cause", core::kMemberFailureCauses[i]}},
               double(counters.member_failures[i]));
  out.family("rdzvd_limits_hit_total", "counter", "Requests refused by a limit, by limit name (rdzvd.yaml limits:).");
  for (const auto& [limit, count] : counters.limits_hit)
    out.sample("rdzvd_limits_hit_total", {{"limit", limit}}, double(count));
  out.family("rdzvd_join_duration_seconds", "histogram",
             "Time from a participant's first Join of a gathering to its rank assignment.");
  out.histogram("rdzvd_join_duration_seconds", {}, counters.join_seconds);
}

void rpc_families(Exposition& out, const RpcMetrics::Snapshot& rpcs) {
  out.family("rdzvd_rpcs_total", "counter", "Finished RPCs (Session: streams) by method and gRPC status code.");
  for (const auto& [method, codes] : rpcs.rpcs)
    for (std::size_t code = 0; code < codes.size(); ++code)
      if (codes[code] != 0)
        out.sample("rdzvd_rpcs_total", {{"method", method}, {"code", grpc_code_name(grpc::StatusCode(code))}},
                   double(codes[code]));
  out.family("rdzvd_kv_request_duration_seconds", "histogram",
             "Duration of key-value calls by method, unary or on a Session stream, blocking time included.");
  for (const auto& [method, histogram] : rpcs.kv_seconds)
    out.histogram("rdzvd_kv_request_duration_seconds", {{"method", method}}, histogram);
}

}  // namespace

std::string render_metrics_page(const core::CoreMetrics& core, const RpcMetrics::Snapshot& rpcs, const PageInfo& info) {
  Exposition out;
  daemon_families(out, core, info);
  gauge_families(out, core, info);
  if (info.expose_ids) per_rendezvous_families(out, core);
  counter_families(out, core.counters);
  rpc_families(out, rpcs);
  return out.text();
}

std::optional<std::uint64_t> resident_memory_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return std::nullopt;
  return resident_pages * std::uint64_t(::sysconf(_SC_PAGESIZE));
}

}  // namespace llmrdzv::server
