// Core liveness rules: sessions, heartbeats, member failure and what survivors hear, graceful
// leave, collection of finished or idle rendezvous, shutdown.
#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

TEST_CASE("a session opens with OPENED for members of the current round only", "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  auto sink = f.open("p0", 1);
  REQUIRE(sink);
  REQUIRE(sink->events.size() == 1);
  CHECK(sink->events[0].kind == EventKind::opened);
  CHECK(sink->events[0].round == 1);
  auto bad_round = f.core.open_session(f.scope(), "p0", 2, std::make_shared<RecordingSink>());
  CHECK(bad_round.status().code == Code::invalid_argument);
  auto stranger = f.core.open_session(f.scope(), "nobody", 1, std::make_shared<RecordingSink>());
  CHECK(stranger.status().code == Code::failed_precondition);
  // A second session of the same member replaces the first, which is finished.
  auto newer = f.open("p0", 1);
  REQUIRE(newer);
  REQUIRE(sink->finished);
  CHECK(sink->finished->code == Code::aborted);
}

TEST_CASE("a session closed without Leave fails the member and closes the round", "[core][liveness]") {
  CoreFixture f;
  auto joins = f.join_all(3);
  std::uint64_t session_p1 = 0;
  auto s0 = f.open("p0", 1);
  auto s1 = f.open("p1", 1, &session_p1);
  auto s2 = f.open("p2", 1);
  REQUIRE(f.core.set(f.scope(), 0, "global", "kept").ok());
  REQUIRE(f.core.set(f.scope(), 1, "round", "dropped").ok());
  auto blocked = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 1, "never", 60000, CoreFixture::record(blocked));
  CHECK_FALSE(blocked->done);

  f.core.close_session(session_p1);
  const int failed_rank = joins[1]->assignment.rank;
  for (const auto& sink : {s0, s2}) {
    REQUIRE(sink->events.size() == 2);
    CHECK(sink->events[1].kind == EventKind::member_failed);
    CHECK(sink->events[1].rank == failed_rank);
    CHECK_THAT(sink->events[1].detail, Catch::Contains("session closed without Leave"));
  }
  CHECK(s1->events.size() == 1);  // the failed member hears nothing more
  REQUIRE(blocked->done);
  CHECK(blocked->status.code == Code::aborted);
  CHECK(f.core.set(f.scope(), 1, "round", "x").code == Code::aborted);
  auto kept = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 0, "global", 0, CoreFixture::record(kept));
  CHECK(kept->values == std::vector<std::string>{"kept"});

  // Survivors plus a replacement form round 2.
  auto again = f.join_all(3);
  REQUIRE(again[0]->done);
  CHECK(again[0]->assignment.round == 2);
}

TEST_CASE("heartbeat silence beyond the timeout fails the member", "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  std::uint64_t s0_id = 0, s1_id = 0;
  auto s0 = f.open("p0", 1, &s0_id);
  auto s1 = f.open("p1", 1, &s1_id);
  for (int i = 0; i < 10; ++i) {  // 10 s of heartbeats every second: both stay
    f.advance(Millis(1000));
    f.core.heartbeat(s0_id);
    f.core.heartbeat(s1_id);
  }
  CHECK(s0->events.size() == 1);
  for (int i = 0; i < 4; ++i) {  // p1 goes silent
    f.advance(Millis(1000));
    f.core.heartbeat(s0_id);
  }
  CHECK(s0->events.size() == 1);  // 4 s of silence is within the 5 s timeout
  CHECK_FALSE(s1->finished);
  f.advance(Millis(1000));
  REQUIRE(s0->events.size() == 2);
  CHECK(s0->events[1].kind == EventKind::member_failed);
  CHECK_THAT(s0->events[1].detail, Catch::Contains("no heartbeat for 5000 ms"));
  // The silent member is told too: its stream is ended, so it stops heart-beating into a round
  // it is no longer in (its stream used to stay open, its heartbeats accepted).
  REQUIRE(s1->finished);
  CHECK(s1->finished->code == Code::aborted);
  CHECK_THAT(s1->finished->message, Catch::Contains("of round 1 of rendezvous '42.0' declared failed: no heartbeat "
                                                    "for 5000 ms"));
  CHECK(s1->events.size() == 1);
  CHECK_FALSE(s0->finished);
  f.core.close_session(s1_id);  // the stream's end, reported afterwards, changes nothing
  CHECK(s0->events.size() == 2);
}

TEST_CASE("a member that never opens a session counts as dead after the heartbeat timeout",
          "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  std::uint64_t s0_id = 0;
  auto s0 = f.open("p0", 1, &s0_id);
  for (int i = 0; i < 5; ++i) {
    f.advance(Millis(1000));
    f.core.heartbeat(s0_id);
  }
  REQUIRE(s0->events.size() == 2);
  CHECK(s0->events[1].kind == EventKind::member_failed);
}

TEST_CASE("Leave tells the others MEMBER_LEFT once per round and the round stays open", "[core][liveness]") {
  CoreFixture f;
  auto joins = f.join_all(4);
  auto s0 = f.open("p0", 1);
  auto s1 = f.open("p1", 1);
  std::uint64_t s2_id = 0;
  auto s2 = f.open("p2", 1, &s2_id);
  REQUIRE(f.core.leave(f.scope(), "p2").ok());
  REQUIRE(s0->events.size() == 2);
  CHECK(s0->events[1].kind == EventKind::member_left);
  CHECK(s0->events[1].rank == joins[2]->assignment.rank);
  CHECK(s1->events.size() == 2);
  CHECK(s2->events.size() == 1);  // the leaver hears nothing of its own leave
  f.core.close_session(s2_id);  // closing after Leave is not a failure
  CHECK(s0->events.size() == 2);
  CHECK(f.core.set(f.scope(), 1, "still", "open").ok());
  CHECK(f.core.leave(f.scope(), "p2").ok());  // leaving twice is harmless

  // Later leaves of the same round are not announced (N^2/2 events at a job's end), but Status
  // still shows who is in.
  REQUIRE(f.core.leave(f.scope(), "p3").ok());
  CHECK(s0->events.size() == 2);
  CHECK(s1->events.size() == 2);
  const auto status = f.core.status(f.scope());
  REQUIRE(status.ok());
  REQUIRE(status.value().rendezvous.size() == 1);
  CHECK(status.value().rendezvous[0].members == 2);
  CHECK(status.value().rendezvous[0].member_details.size() == 2);
}

TEST_CASE("a rendezvous is collected after every member left", "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  REQUIRE(f.core.set(f.scope(), 0, "k", "v").ok());
  REQUIRE(f.core.leave(f.scope(), "p0").ok());
  CHECK(f.core.rendezvous_count() == 1);
  REQUIRE(f.core.leave(f.scope(), "p1").ok());
  CHECK(f.core.rendezvous_count() == 0);
  CHECK(f.core.set(f.scope(), 0, "k", "v").code == Code::not_found);
}

TEST_CASE("an idle rendezvous is collected after the idle timeout", "[core][liveness]") {
  auto config = step_config();
  config.settings.rendezvous_idle_timeout = Millis(30000);
  CoreFixture f(config);
  f.join_all(1);  // no session: the member fails after 5 s, then nobody touches the rendezvous
  f.advance(Millis(20000));
  REQUIRE(f.core.set(f.scope(), 0, "k", "v").ok());  // activity at t=20 s
  f.advance(Millis(29000));
  CHECK(f.core.rendezvous_count() == 1);
  f.advance(Millis(1000));
  CHECK(f.core.rendezvous_count() == 0);
}

TEST_CASE("a tiny idle timeout with a blocked call rechecks at most every 100 ms", "[core][liveness]") {
  auto config = step_config();
  config.settings.rendezvous_idle_timeout = Millis(5);  // a tenth of it is 0 ms: the recheck used to spin
  CoreFixture f(config);
  f.join_all(1);
  auto blocked = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 0, "never", 60000, CoreFixture::record(blocked));
  f.advance(Millis(1000));  // returns at all: the recheck at now + 0 ms kept the fake clock's timers running forever
  const auto next = f.core.next_deadline();
  REQUIRE(next);
  CHECK(*next - f.clock.now() >= Millis(1));  // nothing is due at once
  CHECK(f.core.rendezvous_count() == 1);      // the blocked call keeps it alive
  CHECK_FALSE(blocked->done);
}

TEST_CASE("closing fixed-size gatherings fails their joiners at once, elastic ones go on", "[core][liveness]") {
  CoreFixture fixed;
  auto waiting = fixed.join(fixed.request("p1", 2, 2));
  CHECK_FALSE(waiting->done);
  CHECK(fixed.core.has_live_members());
  fixed.core.close_fixed_gatherings("the rendezvous is closing");
  REQUIRE(waiting->done);
  CHECK(waiting->status.code == Code::aborted);
  CHECK(waiting->status.message == "the rendezvous is closing");
  CHECK_FALSE(fixed.core.has_live_members());  // a per-step rdzvd may now exit
  auto late = fixed.join(fixed.request("p0", 2, 2));  // its round could not gather either
  REQUIRE(late->done);
  CHECK(late->status.code == Code::aborted);

  CoreFixture elastic;
  auto gathering = elastic.join(elastic.request("p1", 2, 3));
  elastic.core.close_fixed_gatherings("the rendezvous is closing");
  CHECK_FALSE(gathering->done);  // its round may still form without the daemon's node
  auto second = elastic.join(elastic.request("p2", 2, 3));
  elastic.advance(Millis(2000));  // last call
  REQUIRE(gathering->done);
  CHECK(gathering->status.ok());
  CHECK(second->assignment.world_size == 2);
}

TEST_CASE("in_use also counts a blocked call of a rendezvous without members", "[core][liveness]") {
  CoreFixture f;
  CHECK_FALSE(f.core.in_use());
  f.join_all(2);  // no sessions: both fail after the 5 s heartbeat timeout
  auto blocked = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 0, "never", 60000, CoreFixture::record(blocked));
  f.advance(Millis(5000));
  REQUIRE_FALSE(f.core.has_live_members());
  CHECK(f.core.in_use());
  f.advance(Millis(55000));
  REQUIRE(blocked->done);
  CHECK_FALSE(f.core.in_use());
}

TEST_CASE("shutdown tells sessions and fails every blocked call with UNAVAILABLE", "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  auto s0 = f.open("p0", 1);
  auto pending_get = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 0, "k", 60000, CoreFixture::record(pending_get));
  auto late = f.join(f.request("late", 2, 2));
  f.core.shutdown("SIGTERM");
  REQUIRE(s0->events.back().kind == EventKind::shutdown);
  REQUIRE(s0->finished);
  CHECK(s0->finished->code == Code::unavailable);
  CHECK(pending_get->status.code == Code::unavailable);
  CHECK_THAT(pending_get->status.message, Catch::Contains("shutting down"));
  CHECK(late->status.code == Code::unavailable);
  auto after = f.join(f.request("x", 2, 2));
  CHECK(after->status.code == Code::unavailable);
  CHECK(f.core.set(f.scope(), 0, "k", "v").code == Code::unavailable);
}

TEST_CASE("status reports counters, and members only with a valid scope", "[core][liveness]") {
  CoreFixture f;
  f.join_all(2);
  f.open("p0", 1);
  REQUIRE(f.core.set(f.scope(), 1, "key", "12345").ok());
  auto summary = f.core.status(std::nullopt);
  REQUIRE(summary.ok());
  CHECK(summary.value().mode == "step");
  REQUIRE(summary.value().rendezvous.size() == 1);
  const auto& r = summary.value().rendezvous[0];
  CHECK(r.rdzv_id == "42.0");
  CHECK(r.round == 1);
  CHECK(r.members == 2);
  CHECK(r.num_keys == 1);
  CHECK(r.kv_bytes == 8);
  CHECK(r.member_details.empty());
  CHECK(summary.value().totals.rendezvous == 1);
  CHECK(summary.value().totals.members == 2);
  CHECK(summary.value().totals.kv_bytes == 8);
  auto detailed = f.core.status(f.scope());
  REQUIRE(detailed.ok());
  REQUIRE(detailed.value().rendezvous[0].member_details.size() == 2);
  CHECK(detailed.value().rendezvous[0].member_details[0].rank == 0);
  CHECK(detailed.value().rendezvous[0].member_details[0].session_open);
  CHECK_FALSE(detailed.value().rendezvous[0].member_details[1].session_open);
  CHECK(f.core.status(Scope{"42.0", "wrong"}).status().code == Code::permission_denied);
  const DaemonInfo alone = f.core.summary();
  CHECK(alone.mode == "step");
  CHECK(alone.uptime_ms == summary.value().uptime_ms);
  CHECK(alone.rendezvous.empty());
}

TEST_CASE("a reloaded heartbeat timeout applies to later rounds, not to members already told", "[core][liveness]") {
  CoreFixture f;  // heartbeat timeout 5 s
  f.join_all(2);
  std::uint64_t s0_id = 0;
  auto s0 = f.open("p0", 1, &s0_id);
  auto s1 = f.open("p1", 1);
  auto settings = f.core.settings();
  settings.heartbeat_timeout = Millis(1500);
  f.core.reconfigure(settings);
  for (int i = 0; i < 4; ++i) {  // p1 silent for 4 s: past the new 1.5 s, within the 5 s it was told
    f.advance(Millis(1000));
    f.core.heartbeat(s0_id);
  }
  CHECK_FALSE(s0->saw(EventKind::member_failed));
  f.advance(Millis(1500));  // 5.5 s of silence: the timeout it was told
  REQUIRE(s0->saw(EventKind::member_failed));
  CHECK_THAT(s0->events.back().detail, Catch::Contains("no heartbeat for 5000 ms"));

  auto next = f.join_all(2);  // round 2 is told, and held to, the new timeout
  REQUIRE(next[0]->done);
  CHECK(next[0]->assignment.heartbeat_timeout_ms == 1500);
  std::uint64_t n0_id = 0;
  auto n0 = f.open("p0", 2, &n0_id);
  f.open("p1", 2);
  f.advance(Millis(1000));
  f.core.heartbeat(n0_id);
  f.advance(Millis(600));  // p1 silent for 1.6 s
  CHECK(n0->saw(EventKind::member_failed));
}
