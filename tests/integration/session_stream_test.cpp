// The client library's one-stream path (join and store barriers on the Session stream) against a
// real rdzvd process: barrier counting, timeouts and errors answered on the stream, the stream
// staying the member's session afterwards, and daemon limits on the stream's join.
#include <catch2/catch.hpp>
#include <future>

#include "llmrdzv/client/client.hpp"
#include "rdzv_error_of.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;

TEST_CASE("store barriers on the session stream: counted, timed out, checked, and the session lives on") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto options_a = rdzvd.client_options(2);
  auto options_b = options_a;
  options_a.participant_id = "a";
  options_b.participant_id = "b";
  Client a(options_a), b(options_b);
  auto joined_b = std::async(std::launch::async, [&b] { return b.join(); });
  const auto assignment = a.join();
  joined_b.get();
  const auto kv_a = a.kv(assignment.round);
  const auto kv_b = b.kv(assignment.round);

  for (int i = 0; i < 3; ++i) {  // the same key again: the count keeps growing, as c10d's does
    auto passed_b = std::async(std::launch::async, [&] { kv_b.barrier("both", 2 * (i + 1), 10s); });
    kv_a.barrier("both", 2 * (i + 1), 10s);
    passed_b.get();
  }
  CHECK(kv_a.get("both", 0ms) == "6");

  const auto started = std::chrono::steady_clock::now();
  const RdzvError timed_out = rdzv_error_of([&] { kv_a.barrier("alone", 2, 300ms); });
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK(timed_out.code() == ErrorCode::deadline_exceeded);
  CHECK_THAT(timed_out.what(), Catch::Contains("barrier (rdzvd " + rdzvd.endpoint() + ")"));
  CHECK(waited >= 250ms);
  CHECK(waited < 5s);
  CHECK(rdzv_error_of([&] { kv_a.barrier("bad", 0, 1s); }).code() == ErrorCode::invalid_argument);
  CHECK(rdzv_error_of([&] { a.kv(assignment.round + 1).barrier("later", 1, 1s); }).code() == ErrorCode::invalid_argument);

  const auto status = a.status(true);  // both sessions are still open and heartbeating
  REQUIRE(status.rendezvous.size() == 1);
  for (const auto& member : status.rendezvous[0].member_details) {
    CHECK(member.session_open);
    CHECK(member.last_heartbeat_age_ms < 1000);
  }
  b.leave();
  a.leave();
}

TEST_CASE("daemon limits apply to the join carried on the session stream") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir, RdzvdConfig{.extra_args = {"--max-participants", "4"}});
  Client client(rdzvd.client_options(8));
  const RdzvError limited = rdzv_error_of([&] { client.join(); });
  CHECK(limited.code() == ErrorCode::resource_exhausted);
  CHECK_THAT(limited.what(), Catch::Contains("max_participants"));

  auto slow = rdzvd.client_options(2);
  slow.join_timeout = 200ms;
  Client alone(slow);
  CHECK(rdzv_error_of([&] { alone.join(); }).code() == ErrorCode::deadline_exceeded);
}
