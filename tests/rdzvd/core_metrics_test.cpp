// The core's counters for /metrics, on the manual clock: joins and the join-to-assignment time,
// rounds completed, failed and restarted, member failures by cause, leaves, limits hit by name,
// and the per-rendezvous gauges of the snapshot.
#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

namespace {

std::uint64_t failures(const CoreCounters& counters, MemberFailure cause) {
  return counters.member_failures[std::size_t(cause)];
}

}  // namespace

TEST_CASE("joins, rounds and the time from Join to assignment are counted", "[core][metrics]") {
  CoreFixture f;
  f.join(f.request("p0", 3, 3));
  f.clock.advance(Millis(400));
  f.join(f.request("p1", 3, 3));
  f.join(f.request("p1", 3, 3));  // a retried Join is the same participant, not another join
  f.clock.advance(Millis(100));
  f.join(f.request("p2", 3, 3));
  const CoreMetrics metrics = f.core.metrics();
  CHECK(metrics.counters.rendezvous_created == 1);
  CHECK(metrics.counters.joins == 3);
  CHECK(metrics.counters.rounds_completed == 1);
  CHECK(metrics.counters.rounds_restarted == 0);
  const auto& joins = metrics.counters.join_seconds;
  CHECK(joins.count() == 3);
  CHECK(joins.sum() == Approx(0.5 + 0.1 + 0.0));
  CHECK(joins.cumulative(0) == 1);  // le=0.001: p2, assigned as it joined
  REQUIRE(metrics.rendezvous.size() == 1);
  CHECK(metrics.rendezvous[0].owner.empty());  // step mode has no owners
  CHECK(metrics.rendezvous[0].status.rdzv_id == "42.0");
  CHECK(metrics.rendezvous[0].status.state == "complete");
  CHECK(metrics.rendezvous[0].status.members == 3);
  CHECK(metrics.sessions == 0);
}

TEST_CASE("member failures count by cause, and the next round counts as restarted", "[core][metrics]") {
  CoreFixture f;
  f.join_all(2);
  std::uint64_t session_p0 = 0;
  REQUIRE(f.open("p0", 1, &session_p0));
  REQUIRE(f.open("p1", 1));
  CHECK(f.core.metrics().sessions == 2);
  f.core.close_session(session_p0);  // the stream ended without a Leave
  CoreCounters counters = f.core.metrics().counters;
  CHECK(failures(counters, MemberFailure::session_closed) == 1);
  CHECK(failures(counters, MemberFailure::heartbeat_timeout) == 0);
  CHECK(counters.rounds_failed == 1);

  f.join_all(2);  // both come back: round 2
  CHECK(f.core.metrics().counters.rounds_restarted == 1);
  f.advance(Millis(5000));  // nobody opened a session for round 2 nor sent heartbeats
  counters = f.core.metrics().counters;
  CHECK(failures(counters, MemberFailure::heartbeat_timeout) == 1);
  CHECK(counters.rounds_failed == 2);
  CHECK(counters.rounds_completed == 2);
  CHECK(counters.member_leaves == 0);
}

TEST_CASE("graceful leaves are counted apart from failures", "[core][metrics]") {
  CoreFixture f;
  f.join_all(2);
  REQUIRE(f.core.leave(f.scope(), "p0").ok());
  const CoreCounters counters = f.core.metrics().counters;
  CHECK(counters.member_leaves == 1);
  CHECK(counters.rounds_failed == 0);
  CHECK(failures(counters, MemberFailure::session_closed) == 0);
}

TEST_CASE("limits hit are counted by limit name, in the core and in the key-value spaces", "[core][metrics]") {
  CoreConfig config = step_config();
  config.settings.limits.max_key_length = 4;
  config.settings.limits.max_timeout_ms = 1000;
  CoreFixture f(config);
  f.join_all(1);
  CHECK(f.core.set(f.scope(), 0, "too-long", "v").code == Code::resource_exhausted);
  CHECK(f.core.set(f.scope(), 1, "longer", "v").code == Code::resource_exhausted);
  auto join = f.request("p9", 1, 1);
  join.timeout_ms = 5000;
  CHECK(f.join(join)->status.code == Code::resource_exhausted);
  const auto& hit = f.core.metrics().counters.limits_hit;
  CHECK(hit.size() == 2);
  CHECK(hit.at("max_key_length") == 2);
  CHECK(hit.at("max_timeout_ms") == 1);
}
