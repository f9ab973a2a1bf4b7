// The /metrics page rdzvd renders: aggregate gauges by default with no rendezvous id anywhere,
// per-rendezvous series (escaped ids, uid in site mode) only with metrics_expose_ids, per-user
// counts in site mode, the server's RPC counts by method and status code, and the counters and
// gauges of a core driven through failures, a restart, a limit and key-value writes.
#include <catch2/catch.hpp>

#include "core_fixture.hpp"
#include "metrics_page.hpp"

using namespace llmrdzv;
using namespace llmrdzv::server;

namespace {

core::CoreMetrics two_rendezvous(const std::string& owner) {
  core::CoreMetrics metrics;
  RendezvousStatus running;
  running.rdzv_id = "secret \"job\"";
  running.state = "complete";
  running.round = 2;
  running.members = 4;
  running.kv_bytes = 100;
  RendezvousStatus gathering;
  gathering.rdzv_id = "other";
  gathering.state = "gathering";
  gathering.joined = 3;
  metrics.rendezvous = {{owner, running}, {owner, gathering}};
  metrics.counters.joins = 7;
  metrics.uptime_ms = 1500;
  return metrics;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("by default the page shows totals and no rendezvous id", "[metrics]") {
  const PageInfo info{"1.2.3", "step", false, 1700000000.5, 4096};
  const std::string text = render_metrics_page(two_rendezvous(""), {}, info);
  CHECK(text.find("secret") == std::string::npos);
  CHECK(text.find("rdzv_id") == std::string::npos);
  CHECK(text.find("uid") == std::string::npos);
  for (const char* line : {"rdzvd_rendezvous{state=\"complete\"} 1", "rdzvd_rendezvous{state=\"gathering\"} 1",
                           "rdzvd_rendezvous{state=\"closed\"} 0", "rdzvd_members 4", "rdzvd_waiting_participants 3",
                           "rdzvd_kv_bytes 100", "rdzvd_joins_total 7", "rdzvd_uptime_seconds 1.5",
                           "process_start_time_seconds 1700000000.5", "process_resident_memory_bytes 4096",
                           "rdzvd_build_info{version=\"1.2.3\",mode=\"step\"} 1",
                           "# TYPE rdzvd_join_duration_seconds histogram"})
    CHECK(has_line(text, line));
}

TEST_CASE("metrics_expose_ids adds per-rendezvous series with escaped ids", "[metrics]") {
  const PageInfo info{"1.2.3", "step", true, 0, std::nullopt};
  const std::string text = render_metrics_page(two_rendezvous(""), {}, info);
  CHECK(has_line(text, "rdzvd_rendezvous_members{rdzv_id=\"secret \\\"job\\\"\"} 4"));
  CHECK(has_line(text, "rdzvd_rendezvous_round{rdzv_id=\"secret \\\"job\\\"\"} 2"));
  CHECK(has_line(text, "rdzvd_rendezvous_waiting_participants{rdzv_id=\"other\"} 3"));
  CHECK(text.find("process_resident_memory_bytes") == std::string::npos);  // unknown: left out
}

TEST_CASE("site mode: rendezvous per uid always, the uid beside the id only when ids are exposed", "[metrics]") {
  PageInfo info{"1.2.3", "site", false, 0, std::nullopt};
  std::string text = render_metrics_page(two_rendezvous("1000"), {}, info);
  CHECK(has_line(text, "rdzvd_user_rendezvous{uid=\"1000\"} 2"));
  CHECK(text.find("rdzv_id") == std::string::npos);
  info.expose_ids = true;
  text = render_metrics_page(two_rendezvous("1000"), {}, info);
  CHECK(has_line(text, "rdzvd_rendezvous_kv_bytes{rdzv_id=\"secret \\\"job\\\"\",uid=\"1000\"} 100"));
}

TEST_CASE("RPCs count by method and status code, KV calls also by latency", "[metrics]") {
  RpcMetrics rpcs;
  rpcs.rpc_finished("Get", grpc::StatusCode::NOT_FOUND);
  rpcs.rpc_finished("Get", grpc::StatusCode::NOT_FOUND);
  rpcs.finished({"Set", true, RpcMetrics::Clock::now() - std::chrono::milliseconds(2)}, grpc::StatusCode::OK);
  rpcs.finished({"Hello"}, grpc::StatusCode::OK);
  const std::string text = render_metrics_page({}, rpcs.snapshot(), {"1.2.3", "step", false, 0, std::nullopt});
  CHECK(has_line(text, "rdzvd_rpcs_total{method=\"Get\",code=\"NOT_FOUND\"} 2"));
  CHECK(has_line(text, "rdzvd_rpcs_total{method=\"Set\",code=\"OK\"} 1"));
  CHECK(has_line(text, "rdzvd_rpcs_total{method=\"Hello\",code=\"OK\"} 1"));
  CHECK(text.find("code=\"CANCELLED\"") == std::string::npos);  // codes never seen are left out
  CHECK(has_line(text, "rdzvd_kv_request_duration_seconds_count{method=\"Set\"} 1"));
  CHECK(has_line(text, "rdzvd_kv_request_duration_seconds_bucket{method=\"Set\",le=\"0.001\"} 0"));
  CHECK(has_line(text, "rdzvd_kv_request_duration_seconds_bucket{method=\"Set\",le=\"0.0025\"} 1"));
  CHECK(text.find("method=\"Hello\"}") == std::string::npos);  // Hello is no KV call: no latency
}

TEST_CASE("a driven core's failures, restart, limit, sessions and keys reach the page", "[metrics]") {
  using namespace llmrdzv::core::testing;
  core::CoreConfig config = step_config();  // heartbeats every 1 s; a member silent for 5 s fails
  config.settings.limits.max_key_length = 4;
  CoreFixture f(config);
  // Round 1 fails: p0's stream ends without a Leave. p1's stream of round 1 ends as it re-joins.
  f.join_all(2);
  std::uint64_t p0_round1 = 0, p1_round1 = 0;
  REQUIRE(f.open("p0", 1, &p0_round1));
  REQUIRE(f.open("p1", 1, &p1_round1));
  f.core.close_session(p0_round1);
  f.core.close_session(p1_round1);
  // Round 2, a restart: keys in the rendezvous-wide space and in the round's, one key too long.
  f.join_all(2);
  std::uint64_t p1_round2 = 0;
  REQUIRE(f.open("p0", 2));
  REQUIRE(f.open("p1", 2, &p1_round2));
  REQUIRE(f.core.set(f.scope(), 0, "a", "1").ok());
  REQUIRE(f.core.set(f.scope(), 0, "bc", "22").ok());
  REQUIRE(f.core.set(f.scope(), 2, "d", "333").ok());
  CHECK(f.core.set(f.scope(), 0, "too-long", "v").code == core::Code::resource_exhausted);
  // Round 2 fails too: p1 keeps beating, p0 goes silent. Its space goes with it; p0's stream is
  // ended (declared failed), p1's stays open until its client hangs up.
  for (int second = 0; second < 6; ++second) {
    f.core.heartbeat(p1_round2);
    f.advance(core::Millis(1000));
  }
  const std::string text = render_metrics_page(f.core.metrics(), {}, {"1.2.3", "step", false, 0, std::nullopt});
  INFO(text);
  for (const char* line : {"rdzvd_rounds_completed_total 2", "rdzvd_rounds_restarted_total 1",
                           "rdzvd_rounds_failed_total 2", "rdzvd_member_failures_total{cause=\"session_closed\"} 1",
                           "rdzvd_member_failures_total{cause=\"heartbeat_timeout\"} 1",
                           "rdzvd_limits_hit_total{limit=\"max_key_length\"} 1", "rdzvd_sessions 1",
                           "rdzvd_kv_keys 2", "rdzvd_kv_bytes 6", "rdzvd_rendezvous{state=\"closed\"} 1"})
    CHECK(has_line(text, line));
}
