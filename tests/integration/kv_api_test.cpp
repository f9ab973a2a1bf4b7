// The client library's key-value API against a real rdzvd: every operation of the wire contract
// with c10d semantics, deadlines, round spaces, concurrent use from many threads, ABORTED when a
// round closes under a blocked call, and the status view.
#include <catch2/catch.hpp>
#include <future>
#include <mutex>
#include <thread>

#include "llmrdzv/client/client.hpp"
#include "rdzv_error_of.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;

namespace {

template <class Call>
ErrorCode error_of(Call&& call) {
  return rdzv_error_of(std::forward<Call>(call)).code();
}

llmrdzv::client::Options member_options(const RdzvdProcess& rdzvd, std::int32_t world, const std::string& id) {
  auto options = rdzvd.client_options(world);
  options.participant_id = id;
  return options;
}

// Joins two members of one fixed-size-2 rendezvous (the second with `on_event`); returns the round.
std::uint64_t join_two(Client& first, Client& second, llmrdzv::client::SessionCallback on_event = {}) {
  auto second_join = std::async(std::launch::async, [&] { return second.join(std::move(on_event)); });
  const auto round = first.join().round;
  REQUIRE(second_join.get().round == round);
  return round;
}

}  // namespace

TEST_CASE("every key-value operation behaves as c10d expects") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client client(rdzvd.client_options(1));
  const auto assignment = client.join();
  REQUIRE(assignment.rank == 0);
  REQUIRE(assignment.world_size == 1);
  const auto kv = client.kv(assignment.round);

  kv.set("a", std::string("bytes\0with nul", 14));
  CHECK(kv.get("a", 0ms) == std::string("bytes\0with nul", 14));
  CHECK(error_of([&] { kv.get("absent", 0ms); }) == ErrorCode::not_found);
  const auto start = std::chrono::steady_clock::now();
  CHECK(error_of([&] { kv.get("absent", 300ms); }) == ErrorCode::deadline_exceeded);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= 250ms);
  CHECK(waited < 5s);

  CHECK(kv.add("counter", 5) == 5);
  CHECK(kv.add("counter", -2) == 3);
  CHECK(kv.get("counter", 0ms) == "3");

  CHECK(kv.compare_set("cas", "", "first") == "first");       // absent + empty expected: set
  CHECK(kv.compare_set("cas", "wrong", "second") == "first");  // mismatch: unchanged
  CHECK(kv.compare_set("cas", "first", "second") == "second");
  CHECK(kv.compare_set("cas-absent", "expected", "x") == "expected");  // absent + expected given
  CHECK_FALSE(kv.check({"cas-absent"}));

  CHECK(kv.check({"a", "cas"}));
  CHECK_FALSE(kv.check({"a", "nope"}));
  CHECK(error_of([&] { kv.wait({"a", "nope"}, 200ms); }) == ErrorCode::deadline_exceeded);
  kv.wait({"a", "cas"}, 1s);

  kv.append("log", "one,");
  kv.append("log", "two");
  CHECK(kv.get("log", 0ms) == "one,two");

  kv.multi_set({{"m1", "x"}, {"m2", "y"}});
  CHECK(kv.multi_get({"m2", "m1"}, 1s) == std::vector<std::string>{"y", "x"});

  const auto keys_before = kv.num_keys();
  CHECK(kv.delete_key("m1"));
  CHECK_FALSE(kv.delete_key("m1"));
  CHECK(kv.num_keys() == keys_before - 1);
  const auto keys = kv.list_keys();
  CHECK(std::find(keys.begin(), keys.end(), "m2") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "m1") == keys.end());

  kv.barrier("solo-barrier", 1, 1s);
  // Waiting calls need a limit the client can wait for too (0 would mean the daemon's default).
  CHECK(error_of([&] { kv.barrier("zero-barrier", 1, 0ms); }) == ErrorCode::invalid_argument);
  CHECK(error_of([&] { kv.queue_pop("q", true, 0ms); }) == ErrorCode::invalid_argument);

  CHECK(kv.queue_len("q") == 0);
  CHECK_FALSE(kv.queue_pop("q", false, 0ms).has_value());
  kv.queue_push("q", "first");
  kv.queue_push("q", "second");
  CHECK(kv.queue_len("q") == 2);
  CHECK(kv.queue_pop("q", false, 0ms) == "first");
  CHECK(kv.queue_pop("q", true, 1s) == "second");
  CHECK(error_of([&] { kv.queue_pop("q", true, 200ms); }) == ErrorCode::deadline_exceeded);

  // Round spaces are separate: the round's keys are not in the rendezvous-wide space 0.
  CHECK_FALSE(client.kv(0).check({"a"}));
  client.kv(0).set("a", "wide");
  CHECK(kv.get("a", 0ms) == std::string("bytes\0with nul", 14));
}

TEST_CASE("a blocked get wakes when another client sets the key") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client reader(rdzvd.client_options(1));
  reader.join();  // creates the rendezvous; the writer only uses its key-value space
  auto writer_options = rdzvd.client_options(1);
  writer_options.participant_id = "writer";
  Client writer(writer_options);
  auto pending = std::async(std::launch::async, [&] { return reader.kv(0).get("late", 10s); });
  std::this_thread::sleep_for(100ms);
  CHECK(pending.wait_for(0ms) == std::future_status::timeout);
  writer.kv(0).set("late", "here");
  REQUIRE(pending.wait_for(5s) == std::future_status::ready);
  CHECK(pending.get() == "here");
}

TEST_CASE("one client is safe to use from many threads at once") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client client(rdzvd.client_options(1));
  const auto kv = client.kv(client.join().round);
  constexpr int kThreads = 8;
  constexpr int kAddsPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&kv, t] {
      for (int i = 0; i < kAddsPerThread; ++i) {
        kv.add("shared", 1);
        kv.set("own/" + std::to_string(t), std::to_string(i));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(kv.get("shared", 0ms) == std::to_string(kThreads * kAddsPerThread));
  for (int t = 0; t < kThreads; ++t) CHECK(kv.get("own/" + std::to_string(t), 0ms) == std::to_string(kAddsPerThread - 1));
}

TEST_CASE("a call blocked on a round fails with aborted when a member fails") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client survivor(member_options(rdzvd, 2, "survivor"));
  auto doomed = std::make_unique<Client>(member_options(rdzvd, 2, "doomed"));
  const std::uint64_t round = join_two(survivor, *doomed);

  auto blocked = std::async(std::launch::async, [&] {
    try {
      survivor.kv(round).get("never", 30s);
    } catch (const RdzvError& error) {
      return error.code();
    }
    return ErrorCode::internal;
  });
  std::this_thread::sleep_for(100ms);
  doomed.reset();  // session closed without Leave: the daemon counts a failure
  REQUIRE(blocked.wait_for(10s) == std::future_status::ready);
  CHECK(blocked.get() == ErrorCode::aborted);
}

TEST_CASE("status lists the rendezvous and, with the token, its members") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto options = rdzvd.client_options(1);
  options.participant_id = "status-member";
  Client client(options);
  client.join();
  const auto scoped = client.status(true);
  CHECK(scoped.mode == "step");
  REQUIRE(scoped.rendezvous.size() == 1);
  CHECK(scoped.rendezvous.front().rdzv_id == rdzvd.rdzv_id());
  CHECK(scoped.rendezvous.front().members == 1);
  REQUIRE(scoped.rendezvous.front().member_details.size() == 1);
  CHECK(scoped.rendezvous.front().member_details.front().participant_id == "status-member");
  const auto summary = client.status(false);
  REQUIRE(summary.rendezvous.size() == 1);
  CHECK(summary.rendezvous.front().member_details.empty());
}

TEST_CASE("values as large as the daemon stores travel both ways, also on the session stream") {
  // gRPC's default receive cap is 4 MiB; rdzvd's max_value_size is 16 MiB. A blocking get's
  // answer rides on the member's Session stream, where a too-large message would have broken the
  // stream and failed the member.
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client writer(member_options(rdzvd, 2, "big-writer"));
  Client reader(member_options(rdzvd, 2, "big-reader"));
  std::vector<llmrdzv::client::SessionEvent> reader_events;
  std::mutex events_mutex;
  const std::uint64_t round = join_two(writer, reader, [&](const llmrdzv::client::SessionEvent& event) {
    std::lock_guard lock(events_mutex);
    reader_events.push_back(event);
  });
  const auto writer_kv = writer.kv(round);
  const auto reader_kv = reader.kv(round);

  std::string big(12u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char(i * 131 + (i >> 16));
  auto waiting = std::async(std::launch::async, [&] { return reader_kv.get("big", 30s); });
  std::this_thread::sleep_for(100ms);
  writer_kv.set("big", big);
  REQUIRE(waiting.wait_for(30s) == std::future_status::ready);
  CHECK(waiting.get() == big);                        // blocking get: answered on the Session stream
  CHECK(reader_kv.get("big", 0ms) == big);            // plain get
  writer_kv.set("big2", big.substr(1));
  const auto both = reader_kv.multi_get({"big", "big2"}, 5s);  // 24 MiB in one answer
  REQUIRE(both.size() == 2);
  CHECK(both[0] == big);
  CHECK(both[1] == big.substr(1));

  // The session survived: the reader is still a member and the writer heard of no failure.
  auto reader_barrier = std::async(std::launch::async, [&] { reader_kv.barrier("after-big", 2, 10s); });
  writer_kv.barrier("after-big", 2, 10s);
  reader_barrier.get();
  reader.leave();
  writer.leave();
  std::lock_guard lock(events_mutex);
  for (const auto& event : reader_events) CHECK(event.kind != llmrdzv::client::SessionEvent::Kind::stream_lost);
}
