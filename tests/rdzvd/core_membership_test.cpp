// Core membership rules: fixed and elastic rounds, last call, retried joins, late joiners,
// join timeouts and cancellation, parameter checks.
#include <catch2/catch.hpp>
#include <set>

#include "core_fixture.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

TEST_CASE("fixed-size round completes the moment max participants joined", "[core][membership]") {
  CoreFixture f;
  auto a = f.join(f.request("a", 3, 3));
  auto b = f.join(f.request("b", 3, 3));
  CHECK_FALSE(a->done);
  f.advance(Millis(50000));  // no last call in fixed mode: time alone completes nothing
  CHECK_FALSE(a->done);
  auto c = f.join(f.request("c", 3, 3));
  std::set<int> ranks;
  for (const auto& o : {a, b, c}) {
    REQUIRE(o->done);
    CHECK(o->status.ok());
    CHECK(o->assignment.round == 1);
    CHECK(o->assignment.world_size == 3);
    CHECK(o->assignment.heartbeat_interval_ms == 1000);
    CHECK(o->assignment.heartbeat_timeout_ms == 5000);
    ranks.insert(o->assignment.rank);
  }
  CHECK(ranks == std::set<int>{0, 1, 2});
}

TEST_CASE("elastic round completes after last call once min joined", "[core][membership]") {
  CoreFixture f;
  auto a = f.join(f.request("a", 2, 4));
  f.advance(Millis(5000));
  CHECK_FALSE(a->done);  // below min: no last call yet
  auto b = f.join(f.request("b", 2, 4));
  f.advance(Millis(1999));
  CHECK_FALSE(a->done);
  auto c = f.join(f.request("c", 2, 4));  // joins during last call, is counted in
  f.advance(Millis(1));
  REQUIRE(a->done);
  REQUIRE(c->done);
  CHECK(a->assignment.world_size == 3);
  CHECK(c->assignment.world_size == 3);
}

TEST_CASE("elastic round completes at max without waiting for last call", "[core][membership]") {
  CoreFixture f;
  auto a = f.join(f.request("a", 1, 2));
  auto b = f.join(f.request("b", 1, 2));
  REQUIRE(a->done);
  CHECK(b->assignment.world_size == 2);
}

TEST_CASE("last call of the first Join applies and is cancelled when joiners fall below min",
          "[core][membership]") {
  CoreFixture f;
  auto r = f.request("a", 2, 4);
  r.last_call_ms = 500;
  auto a = f.join(r);
  WaiterRef b_ref;
  auto b = f.join(f.request("b", 2, 4), &b_ref);
  f.core.cancel(b_ref);  // b goes away during last call
  CHECK(b->status.code == Code::cancelled);
  f.advance(Millis(600));
  CHECK_FALSE(a->done);  // back below min: no round
  auto c = f.join(f.request("c", 2, 4));
  f.advance(Millis(499));
  CHECK_FALSE(a->done);
  f.advance(Millis(1));
  REQUIRE(a->done);
  CHECK(a->assignment.world_size == 2);
}

TEST_CASE("a retried Join of the same participant is idempotent", "[core][membership]") {
  CoreFixture f;
  auto first = f.join(f.request("a", 2, 2));
  auto retry = f.join(f.request("a", 2, 2));  // the first call's client gave up and retried
  CHECK_FALSE(first->done);
  auto b = f.join(f.request("b", 2, 2));
  REQUIRE(first->done);
  REQUIRE(retry->done);
  CHECK(first->assignment.world_size == 2);
  CHECK(first->assignment.rank == retry->assignment.rank);
  auto after = f.join(f.request("a", 2, 2));  // retry after completion: same answer at once
  REQUIRE(after->done);
  CHECK(after->assignment.rank == first->assignment.rank);
  CHECK(after->assignment.round == 1);
}

TEST_CASE("ranks honour requested ranks only when they are exactly 0..N-1", "[core][membership]") {
  CoreFixture f;
  auto a = f.join(f.request("a", 3, 3, "n0", 2));
  auto b = f.join(f.request("b", 3, 3, "n1", 0));
  auto c = f.join(f.request("c", 3, 3, "n2", 1));
  CHECK(a->assignment.rank == 2);
  CHECK(b->assignment.rank == 0);
  CHECK(c->assignment.rank == 1);
  CHECK(a->assignment.master_host == "n1");

  CoreFixture g;  // duplicate request: stable order by host, then local rank
  auto x = g.join(g.request("x", 3, 3, "hostB", 0, 0));
  auto y = g.join(g.request("y", 3, 3, "hostA", 0, 1));
  auto z = g.join(g.request("z", 3, 3, "hostA", 1, 0));
  CHECK(z->assignment.rank == 0);
  CHECK(y->assignment.rank == 1);
  CHECK(x->assignment.rank == 2);
}

TEST_CASE("local and node ranks come from hosts", "[core][membership]") {
  CoreFixture f;
  std::vector<std::shared_ptr<JoinOutcome>> o;
  // 2 hosts x 2 tasks, SLURM_PROCID block layout: n0 has ranks 0,1; n1 has 2,3.
  o.push_back(f.join(f.request("t3", 4, 4, "n1", 3, 1)));
  o.push_back(f.join(f.request("t0", 4, 4, "n0", 0, 0)));
  o.push_back(f.join(f.request("t2", 4, 4, "n1", 2, 0)));
  o.push_back(f.join(f.request("t1", 4, 4, "n0", 1, 1)));
  for (const auto& x : o) {
    REQUIRE(x->done);
    CHECK(x->assignment.num_nodes == 2);
    CHECK(x->assignment.local_world_size == 2);
    CHECK(x->assignment.master_host == "n0");
  }
  CHECK(o[0]->assignment.node_rank == 1);
  CHECK(o[0]->assignment.local_rank == 1);
  CHECK(o[1]->assignment.node_rank == 0);
  CHECK(o[1]->assignment.local_rank == 0);
  CHECK(o[2]->assignment.local_rank == 0);
  CHECK(o[3]->assignment.local_rank == 1);
}

TEST_CASE("a late joiner waits for the next round and elastic members hear of it", "[core][membership]") {
  CoreFixture f;
  auto a = f.join(f.request("a", 1, 2));
  auto b = f.join(f.request("b", 1, 2));
  REQUIRE(a->done);
  auto sink_a = f.open("a", 1);
  REQUIRE(sink_a);
  auto late = f.join(f.request("c", 1, 2));
  f.advance(Millis(10000));
  CHECK_FALSE(late->done);
  CHECK(sink_a->saw(EventKind::participant_waiting));
  // Members make room by leaving and joining again: the next round includes the late joiner.
  REQUIRE(f.core.leave(f.scope(), "a").ok());
  REQUIRE(f.core.leave(f.scope(), "b").ok());
  f.advance(Millis(2000));  // c alone reached min=1: last call, then round 2
  REQUIRE(late->done);
  CHECK(late->assignment.round == 2);
  CHECK(late->assignment.rank == 0);
}

TEST_CASE("fixed-size late joiner is not counted into the running round", "[core][membership]") {
  CoreFixture f;
  auto all = f.join_all(2);
  auto late = f.join(f.request("p9", 2, 2));
  CHECK_FALSE(late->done);
  auto status = f.core.status(f.scope());
  REQUIRE(status.ok());
  CHECK(status.value().rendezvous[0].members == 2);
  CHECK(status.value().rendezvous[0].waiting == 1);
  CHECK(status.value().rendezvous[0].state == "complete");
}

TEST_CASE("a Join that times out gives DEADLINE_EXCEEDED and is not counted", "[core][membership]") {
  CoreFixture f;
  auto r = f.request("a", 2, 2);
  r.timeout_ms = 3000;
  auto a = f.join(r);
  f.advance(Millis(3000));
  REQUIRE(a->done);
  CHECK(a->status.code == Code::deadline_exceeded);
  CHECK_THAT(a->status.message, Catch::Contains("3000 ms"));
  auto b = f.join(f.request("b", 2, 2));
  CHECK_FALSE(b->done);  // a is gone: b waits for a second participant
  auto c = f.join(f.request("c", 2, 2));
  CHECK(b->done);
}

TEST_CASE("Join parameters are checked", "[core][membership]") {
  CoreFixture f;
  auto expect = [&](JoinRequest r, Code code, const char* text) {
    auto o = f.join(r);
    REQUIRE(o->done);
    CHECK(o->status.code == code);
    CHECK_THAT(o->status.message, Catch::Contains(text));
  };
  expect(f.request("a", 0, 2), Code::invalid_argument, "min_participants");
  expect(f.request("a", 3, 2), Code::invalid_argument, "3:2");
  expect(f.request("", 1, 2), Code::invalid_argument, "participant_id is empty");
  expect(f.request("a", 1, 2, ""), Code::invalid_argument, "host is empty");
  expect(f.request("a", 1, 2, "h", 7), Code::invalid_argument, "requested_rank 7");
  auto first = f.join(f.request("a", 2, 4));
  CHECK_FALSE(first->done);
  expect(f.request("b", 2, 8), Code::failed_precondition, "2:4");
}

TEST_CASE("a full rendezvous refuses more waiting joiners", "[core][membership]") {
  CoreFixture f;
  f.join_all(2);
  f.join(f.request("w1", 2, 2));
  f.join(f.request("w2", 2, 2));
  auto third = f.join(f.request("w3", 2, 2));
  REQUIRE(third->done);
  CHECK(third->status.code == Code::resource_exhausted);
  CHECK_THAT(third->status.message, Catch::Contains("max_participants"));
}

TEST_CASE("with the step's participant range set, the first joiner cannot dictate the membership",
          "[core][membership]") {
  CoreConfig config = step_config();
  config.step_participants = ParticipantRange{2, 2};
  CoreFixture f(config);
  // A hostile first Join asking for a huge fixed size is refused; it creates nothing.
  auto hostile = f.join(f.request("intruder", 16384, 16384));
  REQUIRE(hostile->done);
  CHECK(hostile->status.code == Code::failed_precondition);
  CHECK(hostile->status.message ==
        "rendezvous '42.0' is for 2:2 participants (the step's layout, set when the daemon started); this Join asks "
        "for 16384:16384");
  CHECK(f.core.rendezvous_count() == 0);
  // The step's own ranks complete their round as usual.
  auto a = f.join(f.request("a", 2, 2));
  auto b = f.join(f.request("b", 2, 2));
  REQUIRE(a->done);
  REQUIRE(b->done);
  CHECK(a->status.ok());
  CHECK(b->assignment.world_size == 2);
}
