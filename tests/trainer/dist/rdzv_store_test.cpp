// RdzvStore against a real rdzvd: every c10d::Store operation, blocking get across members,
// round-scoped keys, prefixes, and timeouts surfacing as c10d errors that name the key.
// torch before Catch: c10's logging defines a CHECK macro that would replace Catch's.
#include <torch/csrc/distributed/c10d/exception.h>

#include "llmrdzv/dist/rdzv_store.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "rdzvd_process.hpp"

using namespace llmrdzv;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

// Two members of one fixed-size-2 rendezvous, each with its own client and store.
struct TwoMembers {
  testing::ScratchDir dir;
  testing::RdzvdProcess rdzvd{dir};
  std::shared_ptr<client::Client> a, b;
  std::uint64_t round = 0;

  TwoMembers() {
    auto options_a = rdzvd.client_options(2), options_b = rdzvd.client_options(2);
    options_a.participant_id = "member-a";
    options_b.participant_id = "member-b";
    a = std::make_shared<client::Client>(options_a);
    b = std::make_shared<client::Client>(options_b);
    auto joined_b = std::async(std::launch::async, [&] { return b->join(); });
    round = a->join().round;
    REQUIRE(joined_b.get().round == round);
  }
  c10::intrusive_ptr<dist::RdzvStore> store(const std::shared_ptr<client::Client>& c,
                                            std::chrono::milliseconds timeout = 5s,
                                            const std::string& prefix = "pg/") {
    return c10::make_intrusive<dist::RdzvStore>(c, round, prefix, timeout);
  }
};

}  // namespace

TEST_CASE("RdzvStore set/get/add/compareSet/delete/check/numKeys through rdzvd") {
  TwoMembers m;
  auto s = m.store(m.a);
  s->set("k", bytes("v1"));
  CHECK(text(m.store(m.b)->get("k")) == "v1");
  CHECK(s->add("counter", 5) == 5);
  CHECK(m.store(m.b)->add("counter", -2) == 3);
  CHECK(text(s->compareSet("cas", {}, bytes("first"))) == "first");
  CHECK(text(s->compareSet("cas", bytes("wrong"), bytes("second"))) == "first");
  CHECK(text(s->compareSet("cas", bytes("first"), bytes("second"))) == "second");
  CHECK(s->check({"k", "counter"}));
  CHECK_FALSE(s->check({"k", "absent"}));
  CHECK(s->getNumKeys() == 3);
  CHECK(s->deleteKey("k"));
  CHECK_FALSE(s->deleteKey("k"));
  CHECK_FALSE(s->check({"k"}));
}

TEST_CASE("RdzvStore get blocks until another member sets the key") {
  TwoMembers m;
  auto writer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    m.store(m.b)->set("late", bytes("here"));
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(text(m.store(m.a)->get("late")) == "here");
  CHECK(std::chrono::steady_clock::now() - start >= 250ms);
  writer.get();
  m.store(m.a)->wait({"late"});
}

TEST_CASE("RdzvStore with c10d's kNoTimeout waits instead of failing at once") {
  TwoMembers m;
  auto writer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    m.store(m.b)->set("late", bytes("here"));
    m.store(m.b)->queuePush("queue", bytes("item"));
  });
  auto s = m.store(m.a, c10d::Store::kNoTimeout);
  CHECK(text(s->get("late")) == "here");
  s->wait({"late"});
  CHECK(text(s->queuePop("queue", true)) == "item");
  auto other = std::async(std::launch::async, [&] { m.store(m.b)->barrier("b", 2, c10d::Store::kNoTimeout); });
  s->barrier("b", 2, c10d::Store::kNoTimeout);
  other.get();
  writer.get();
}

TEST_CASE("RdzvStore timeouts throw c10d errors naming the key and the limit") {
  TwoMembers m;
  auto s = m.store(m.a, 300ms);
  REQUIRE_THROWS_AS(s->get("never"), c10::DistError);
  REQUIRE_THROWS_WITH(s->get("never"), Contains("get 'never'") && Contains("300 ms"));
  REQUIRE_THROWS_WITH(s->wait({"never", "nor-this"}, 200ms), Contains("never, nor-this") && Contains("200 ms"));
}

TEST_CASE("RdzvStore extended API: append, multiGet/multiSet, listKeys, queues, barrier, clone") {
  TwoMembers m;
  auto s = m.store(m.a);
  REQUIRE(s->hasExtendedApi());
  s->append("log", bytes("ab"));
  s->append("log", bytes("cd"));
  CHECK(text(s->get("log")) == "abcd");
  s->multiSet({"x", "y"}, {bytes("1"), bytes("2")});
  const auto values = m.store(m.b)->multiGet({"y", "x"});
  REQUIRE(values.size() == 2);
  CHECK(text(values[0]) == "2");
  CHECK(text(values[1]) == "1");
  REQUIRE_THROWS_WITH(s->multiSet({"x"}, {}), Contains("1 keys but 0 values"));
  auto keys = s->listKeys();
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"log", "x", "y"});

  s->queuePush("q", bytes("first"));
  s->queuePush("q", bytes("second"));
  CHECK(s->queueLen("q") == 2);
  CHECK(text(m.store(m.b)->queuePop("q", false)) == "first");
  CHECK(text(s->queuePop("q", true)) == "second");
  REQUIRE_THROWS_AS(s->queuePop("q", false), c10::DistQueueEmptyError);

  auto other = std::async(std::launch::async, [&] { m.store(m.b)->barrier("b", 2, 5s); });
  s->barrier("b", 2, 5s);
  other.get();

  auto copy = s->clone();
  CHECK(text(copy->get("x")) == "1");
}

TEST_CASE("RdzvStore keys are scoped by round and prefix") {
  TwoMembers m;
  m.store(m.a, 5s, "one/")->set("k", bytes("in-one"));
  auto two = m.store(m.a, 300ms, "two/");
  CHECK_FALSE(two->check({"k"}));
  auto round0 = c10::make_intrusive<dist::RdzvStore>(m.a, 0, "one/", 300ms);
  CHECK_FALSE(round0->check({"k"}));
  CHECK(m.store(m.b, 5s, "one/")->listKeys() == std::vector<std::string>{"k"});
}
