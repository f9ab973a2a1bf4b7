// Core key-value semantics (c10d::Store's), blocking calls completed by later writes or by
// timeouts on the manual clock, round spaces versus the rendezvous-wide space.
#include <catch2/catch.hpp>

#include "core_fixture.hpp"

using namespace llmrdzv::core;
using namespace llmrdzv::core::testing;

namespace {

CoreConfig long_heartbeat_config() {
  CoreConfig config = step_config();
  config.settings.heartbeat_timeout = Millis(100000);  // members without sessions live long enough
  return config;
}

struct KvFixture : CoreFixture {
  KvFixture() : CoreFixture(long_heartbeat_config()) { join_all(2); }
  std::shared_ptr<KvOutcome> get(const std::string& key, std::uint32_t timeout_ms, std::uint64_t round = 1) {
    auto o = std::make_shared<KvOutcome>();
    core.get(scope(), round, key, timeout_ms, record(o));
    return o;
  }
};

}  // namespace

TEST_CASE("set then get returns the bytes, absent keys are NOT_FOUND without waiting", "[core][kv]") {
  KvFixture f;
  const std::string binary("a\0b\xff", 4);
  REQUIRE(f.core.set(f.scope(), 1, "k", binary).ok());
  auto got = f.get("k", 0);
  REQUIRE(got->done);
  CHECK(got->values == std::vector<std::string>{binary});
  auto missing = f.get("nope", 0);
  REQUIRE(missing->done);
  CHECK(missing->status.code == Code::not_found);
  CHECK_THAT(missing->status.message, Catch::Contains("'nope'"));
}

TEST_CASE("a blocked get completes on the set, or times out", "[core][kv]") {
  KvFixture f;
  auto waiting = f.get("later", 5000);
  auto expiring = f.get("never", 5000);
  f.advance(Millis(4000));
  CHECK_FALSE(waiting->done);
  REQUIRE(f.core.set(f.scope(), 1, "later", "v").ok());
  REQUIRE(waiting->done);
  CHECK(waiting->values == std::vector<std::string>{"v"});
  CHECK_FALSE(expiring->done);
  f.advance(Millis(1000));
  REQUIRE(expiring->done);
  CHECK(expiring->status.code == Code::deadline_exceeded);
  CHECK_THAT(expiring->status.message, Catch::Contains("'never'"));
}

TEST_CASE("a cancelled get completes with CANCELLED and a later set finds no waiter", "[core][kv]") {
  KvFixture f;
  auto o = std::make_shared<KvOutcome>();
  WaiterRef ref = f.core.get(f.scope(), 1, "k", 5000, CoreFixture::record(o));
  REQUIRE(ref.id != 0);
  f.core.cancel(ref);
  CHECK(o->status.code == Code::cancelled);
  o->done = false;
  REQUIRE(f.core.set(f.scope(), 1, "k", "v").ok());
  CHECK_FALSE(o->done);
  f.core.cancel(ref);  // cancelling twice is harmless
}

TEST_CASE("add keeps decimal text, starts from 0 and rejects non-integers", "[core][kv]") {
  KvFixture f;
  CHECK(f.core.add(f.scope(), 1, "n", 5).value() == 5);
  CHECK(f.core.add(f.scope(), 1, "n", -7).value() == -2);
  auto text = f.get("n", 0);
  CHECK(text->values == std::vector<std::string>{"-2"});
  REQUIRE(f.core.set(f.scope(), 1, "s", "abc").ok());
  auto bad = f.core.add(f.scope(), 1, "s", 1);
  CHECK(bad.status().code == Code::invalid_argument);
  CHECK_THAT(bad.status().message, Catch::Contains("integer"));
  REQUIRE(f.core.set(f.scope(), 1, "big", "9223372036854775807").ok());
  CHECK(f.core.add(f.scope(), 1, "big", 1).status().code == Code::invalid_argument);
}

TEST_CASE("compare_set follows c10d semantics", "[core][kv]") {
  KvFixture f;
  // Absent key, non-empty expected: nothing stored, expected returned.
  CHECK(f.core.compare_set(f.scope(), 1, "k", "x", "y").value() == "x");
  CHECK(f.get("k", 0)->status.code == Code::not_found);
  // Absent key, empty expected: desired stored.
  CHECK(f.core.compare_set(f.scope(), 1, "k", "", "first").value() == "first");
  // Present, matching: swapped.
  CHECK(f.core.compare_set(f.scope(), 1, "k", "first", "second").value() == "second");
  // Present, not matching: current value returned, nothing changes.
  CHECK(f.core.compare_set(f.scope(), 1, "k", "first", "third").value() == "second");
  CHECK(f.get("k", 0)->values == std::vector<std::string>{"second"});
}

TEST_CASE("check, delete, num_keys, list_keys and append", "[core][kv]") {
  KvFixture f;
  REQUIRE(f.core.set(f.scope(), 1, "b", "1").ok());
  REQUIRE(f.core.set(f.scope(), 1, "a", "2").ok());
  CHECK(f.core.check(f.scope(), 1, {"a", "b"}).value());
  CHECK_FALSE(f.core.check(f.scope(), 1, {"a", "c"}).value());
  CHECK(f.core.num_keys(f.scope(), 1).value() == 2);
  CHECK(f.core.list_keys(f.scope(), 1).value() == std::vector<std::string>{"a", "b"});
  CHECK(f.core.delete_key(f.scope(), 1, "a").value());
  CHECK_FALSE(f.core.delete_key(f.scope(), 1, "a").value());
  CHECK(f.core.num_keys(f.scope(), 1).value() == 1);
  REQUIRE(f.core.append(f.scope(), 1, "log", "x").ok());
  REQUIRE(f.core.append(f.scope(), 1, "log", "yz").ok());
  CHECK(f.get("log", 0)->values == std::vector<std::string>{"xyz"});
  CHECK(f.core.num_keys(f.scope(), 0).value() == 0);  // round 0 is a different space
}

TEST_CASE("wait and multi_get block until every key exists", "[core][kv]") {
  KvFixture f;
  auto waited = std::make_shared<KvOutcome>();
  auto multi = std::make_shared<KvOutcome>();
  f.core.wait(f.scope(), 1, {"x", "y"}, 10000, CoreFixture::record(waited));
  f.core.multi_get(f.scope(), 1, {"y", "x"}, 10000, CoreFixture::record(multi));
  REQUIRE(f.core.set(f.scope(), 1, "x", "1").ok());
  CHECK_FALSE(waited->done);
  CHECK_FALSE(multi->done);
  REQUIRE(f.core.multi_set(f.scope(), 1, {{"y", "2"}, {"z", "3"}}).ok());
  REQUIRE(waited->done);
  CHECK(waited->status.ok());
  REQUIRE(multi->done);
  CHECK(multi->values == std::vector<std::string>{"2", "1"});
  auto no_wait = std::make_shared<KvOutcome>();
  f.core.wait(f.scope(), 1, {"x", "absent"}, 0, CoreFixture::record(no_wait));
  CHECK(no_wait->status.code == Code::deadline_exceeded);
}

TEST_CASE("multi_get refuses a key given twice, and answers over max_reply_bytes, before copying", "[core][kv]") {
  CoreConfig config = long_heartbeat_config();
  config.settings.limits.max_reply_bytes = 10;
  CoreFixture f(config);
  f.join_all(2);
  REQUIRE(f.core.set(f.scope(), 1, "big", std::string(6, 'v')).ok());
  REQUIRE(f.core.set(f.scope(), 1, "small", "v").ok());
  // Each repeat of a key used to copy its value once more into the answer.
  auto twice = std::make_shared<KvOutcome>();
  f.core.multi_get(f.scope(), 1, {"big", "small", "big"}, 0, CoreFixture::record(twice));
  REQUIRE(twice->done);
  CHECK(twice->status.code == Code::invalid_argument);
  CHECK_THAT(twice->status.message, Catch::Contains("key 'big' given twice"));
  CHECK(twice->values.empty());

  auto fits = std::make_shared<KvOutcome>();
  f.core.multi_get(f.scope(), 1, {"big", "small"}, 0, CoreFixture::record(fits));
  CHECK(fits->values == std::vector<std::string>{"vvvvvv", "v"});  // 7 bytes
  REQUIRE(f.core.set(f.scope(), 1, "other", std::string(5, 'v')).ok());
  auto over = std::make_shared<KvOutcome>();
  f.core.multi_get(f.scope(), 1, {"big", "other"}, 0, CoreFixture::record(over));
  CHECK(over->status.code == Code::resource_exhausted);
  CHECK_THAT(over->status.message,
             Catch::Contains("limit max_reply_bytes (10) exceeded: the values of 2 key(s) hold 11 bytes"));
  CHECK(over->values.empty());
  // A blocked one is checked when its last key appears.
  auto blocked = std::make_shared<KvOutcome>();
  f.core.multi_get(f.scope(), 1, {"big", "later"}, 10000, CoreFixture::record(blocked));
  CHECK_FALSE(blocked->done);
  REQUIRE(f.core.set(f.scope(), 1, "later", std::string(5, 'v')).ok());
  REQUIRE(blocked->done);
  CHECK(blocked->status.code == Code::resource_exhausted);
  CHECK(f.core.metrics().counters.limits_hit.at("max_reply_bytes") == 2);
  // Wait and Check copy no value: a key named twice is harmless there.
  auto waited = std::make_shared<KvOutcome>();
  f.core.wait(f.scope(), 1, {"big", "big"}, 0, CoreFixture::record(waited));
  CHECK(waited->status.ok());
  CHECK(f.core.check(f.scope(), 1, {"small", "small"}).value());
}

TEST_CASE("a key deleted before the last awaited key appears keeps the waiter blocked", "[core][kv]") {
  KvFixture f;
  auto o = std::make_shared<KvOutcome>();
  f.core.multi_get(f.scope(), 1, {"a", "b"}, 10000, CoreFixture::record(o));
  REQUIRE(f.core.set(f.scope(), 1, "a", "1").ok());
  REQUIRE(f.core.delete_key(f.scope(), 1, "a").value());
  REQUIRE(f.core.set(f.scope(), 1, "b", "2").ok());
  CHECK_FALSE(o->done);
  REQUIRE(f.core.set(f.scope(), 1, "a", "3").ok());
  REQUIRE(o->done);
  CHECK(o->values == std::vector<std::string>{"3", "2"});
}

TEST_CASE("multi_set is all or nothing", "[core][kv]") {
  KvFixture f;
  auto dup = f.core.multi_set(f.scope(), 1, {{"a", "1"}, {"a", "2"}});
  CHECK(dup.code == Code::invalid_argument);
  auto empty_key = f.core.multi_set(f.scope(), 1, {{"ok", "1"}, {"", "2"}});
  CHECK(empty_key.code == Code::invalid_argument);
  CHECK(f.core.num_keys(f.scope(), 1).value() == 0);
}

TEST_CASE("barrier releases everyone when the last participant arrives", "[core][kv]") {
  KvFixture f;
  std::vector<std::shared_ptr<KvOutcome>> arrivals;
  for (int i = 0; i < 4; ++i) {
    arrivals.push_back(std::make_shared<KvOutcome>());
    f.core.barrier(f.scope(), 1, "bar", 4, 10000, CoreFixture::record(arrivals.back()));
    for (int j = 0; j <= i; ++j) CHECK(arrivals[j]->done == (i == 3));
  }
  for (const auto& a : arrivals) CHECK(a->status.ok());
  auto timed_out = std::make_shared<KvOutcome>();
  f.core.barrier(f.scope(), 1, "other", 2, 1000, CoreFixture::record(timed_out));
  f.advance(Millis(1000));
  CHECK(timed_out->status.code == Code::deadline_exceeded);

  // A barrier refused for a limit is no arrival: the counter stays where it was.
  auto too_long = std::make_shared<KvOutcome>();
  f.core.barrier(f.scope(), 1, "refused", 2, f.core.settings().limits.max_timeout_ms + 1, CoreFixture::record(too_long));
  REQUIRE(too_long->done);
  CHECK(too_long->status.code == Code::resource_exhausted);
  auto counter = std::make_shared<KvOutcome>();
  f.core.get(f.scope(), 1, "refused", 0, CoreFixture::record(counter));
  CHECK(counter->status.code == Code::not_found);
}

TEST_CASE("queues are FIFO and a blocked pop takes the next push", "[core][kv]") {
  KvFixture f;
  REQUIRE(f.core.queue_push(f.scope(), 1, "q", "1").ok());
  REQUIRE(f.core.queue_push(f.scope(), 1, "q", "2").ok());
  CHECK(f.core.queue_len(f.scope(), 1, "q").value() == 2);
  auto first = std::make_shared<KvOutcome>();
  f.core.queue_pop(f.scope(), 1, "q", false, 0, CoreFixture::record(first));
  CHECK(first->values == std::vector<std::string>{"1"});
  auto second = std::make_shared<KvOutcome>();
  f.core.queue_pop(f.scope(), 1, "q", false, 0, CoreFixture::record(second));
  CHECK(second->values == std::vector<std::string>{"2"});
  auto empty = std::make_shared<KvOutcome>();
  f.core.queue_pop(f.scope(), 1, "q", false, 0, CoreFixture::record(empty));
  CHECK(empty->status.code == Code::not_found);
  auto p1 = std::make_shared<KvOutcome>();
  auto p2 = std::make_shared<KvOutcome>();
  f.core.queue_pop(f.scope(), 1, "q", true, 5000, CoreFixture::record(p1));
  f.core.queue_pop(f.scope(), 1, "q", true, 5000, CoreFixture::record(p2));
  REQUIRE(f.core.queue_push(f.scope(), 1, "q", "a").ok());
  CHECK(p1->values == std::vector<std::string>{"a"});
  CHECK_FALSE(p2->done);
  CHECK(f.core.queue_len(f.scope(), 1, "q").value() == 0);
  f.advance(Millis(5000));
  CHECK(p2->status.code == Code::deadline_exceeded);
}

TEST_CASE("round spaces: later rounds are invalid, closed rounds ABORTED, round 0 persists", "[core][kv]") {
  KvFixture f;
  CHECK(f.core.set(f.scope(), 2, "k", "v").code == Code::invalid_argument);
  REQUIRE(f.core.set(f.scope(), 0, "k", "global").ok());
  REQUIRE(f.core.leave(f.scope(), "p0").ok());
  REQUIRE(f.core.set(f.scope(), 1, "k", "v").ok());  // one member left: round 1 still open
  f.advance(Millis(100000));                          // p1 never opened a session: it fails
  CHECK(f.core.set(f.scope(), 1, "k", "v").code == Code::aborted);
  CHECK(f.get("k", 0, 0)->values == std::vector<std::string>{"global"});
}

TEST_CASE("KV calls on an unknown rendezvous are NOT_FOUND", "[core][kv]") {
  CoreFixture f;  // nobody joined
  CHECK(f.core.set(f.scope(), 0, "k", "v").code == Code::not_found);
}

TEST_CASE("2048 participants join and pass a barrier with one timer each", "[core][kv][scale]") {
  CoreFixture f;
  const int n = 2048;
  auto joins = f.join_all(n);
  std::vector<bool> rank_seen(n, false);
  for (const auto& j : joins) {
    REQUIRE(j->done);
    REQUIRE(j->assignment.world_size == n);
    rank_seen.at(j->assignment.rank) = true;
  }
  CHECK(std::find(rank_seen.begin(), rank_seen.end(), false) == rank_seen.end());
  std::vector<std::shared_ptr<KvOutcome>> arrivals;
  for (int i = 0; i < n; ++i) {
    arrivals.push_back(std::make_shared<KvOutcome>());
    f.core.barrier(f.scope(), 1, "barrier", n, 60000, CoreFixture::record(arrivals.back()));
  }
  for (const auto& a : arrivals) REQUIRE(a->status.ok());
  auto status = f.core.status(f.scope());
  CHECK(status.value().rendezvous[0].members == n);
}
