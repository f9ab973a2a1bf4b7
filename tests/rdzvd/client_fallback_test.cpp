// The client library against a server that advertises the one-stream features and against one
// that withholds them (as an older rdzvd would): the same public calls give the same results,
// joining and making the store calls that block on the Session stream in the first case, with
// Join and the unary calls in the second (the server counts which calls it received).
#include <catch2/catch.hpp>
#include <future>
#include <set>

#include "llmrdzv/client/client.hpp"
#include "server_fixture.hpp"

using namespace llmrdzv::server::testing;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;

namespace {

llmrdzv::client::Options options_for(const InProcessServer& server, const std::string& id, int n) {
  llmrdzv::client::Options options;
  options.endpoint = server.endpoint();
  options.rdzv_id = "7.0";
  options.token = "server-test-token";
  options.participant_id = id;
  options.host = "localhost";
  options.min_world = n;
  options.max_world = n;
  options.join_timeout = std::chrono::seconds(20);
  return options;
}

}  // namespace

TEST_CASE("client library: same results with and without the server's one-stream features", "[server][client]") {
  const bool advertised = GENERATE(true, false);
  INFO("features advertised: " << advertised);
  InProcessServer server(server_test_config(),
                         advertised ? llmrdzv::server::RendezvousService::all_features() : std::vector<std::string>{});
  const int n = 3;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < n; ++i) {
    clients.push_back(std::make_unique<Client>(options_for(server, "c" + std::to_string(i), n)));
  }
  std::atomic<int> lost{0};  // stream_lost events: none expected in this test
  const auto count_lost = [&lost](const llmrdzv::client::SessionEvent& event) {
    if (event.kind == llmrdzv::client::SessionEvent::Kind::stream_lost) ++lost;
  };
  std::vector<std::future<llmrdzv::client::Assignment>> joins;
  for (auto& client : clients) {
    joins.push_back(std::async(std::launch::async, [&client, &count_lost] { return client->join(count_lost); }));
  }
  std::set<int> ranks;
  std::uint64_t round = 0;
  std::vector<llmrdzv::client::Assignment> assignments;
  for (auto& join : joins) {
    const auto& assignment = assignments.emplace_back(join.get());
    CHECK(assignment.world_size == n);
    CHECK(assignment.heartbeat_interval == std::chrono::milliseconds(100));
    round = assignment.round;
    ranks.insert(assignment.rank);
  }
  CHECK(ranks.size() == std::size_t(n));

  std::vector<std::future<void>> barriers;
  for (auto& client : clients) {
    barriers.push_back(std::async(std::launch::async, [&client, round] {
      client->kv(round).barrier("all", n, std::chrono::seconds(10));
    }));
  }
  for (auto& barrier : barriers) barrier.get();
  CHECK(clients[0]->kv(round).get("all", std::chrono::milliseconds(0)) == "3");

  CHECK_THROWS_MATCHES(clients[0]->kv(round).barrier("alone", 2, std::chrono::milliseconds(100)), RdzvError,
                       Catch::Predicate<RdzvError>([](const RdzvError& e) {
                         return e.code() == ErrorCode::deadline_exceeded &&
                                std::string(e.what()).starts_with("barrier (rdzvd ");
                       }));
  CHECK_THROWS_MATCHES(clients[0]->kv(round + 1).barrier("later", 1, std::chrono::milliseconds(100)), RdzvError,
                       Catch::Predicate<RdzvError>(
                           [](const RdzvError& e) { return e.code() == ErrorCode::invalid_argument; }));

  // The other calls that block: the same answers either way.
  const auto kv0 = clients[0]->kv(round);
  const auto kv1 = clients[1]->kv(round);
  auto waited = std::async(std::launch::async, [&kv1] { kv1.wait({"k1", "k2"}, std::chrono::seconds(10)); });
  auto got = std::async(std::launch::async, [&kv1] { return kv1.get("k2", std::chrono::seconds(10)); });
  auto popped = std::async(std::launch::async, [&kv1] { return kv1.queue_pop("q", true, std::chrono::seconds(10)); });
  kv0.set("k1", "v1");
  kv0.set("k2", std::string("v\0002", 3));
  kv0.queue_push("q", "item");
  waited.get();
  CHECK(got.get() == std::string("v\0002", 3));
  CHECK(popped.get() == std::optional<std::string>("item"));
  CHECK(kv1.multi_get({"k2", "k1"}, std::chrono::seconds(1)) ==
        std::vector<std::string>{std::string("v\0002", 3), "v1"});
  CHECK_THROWS_MATCHES(kv1.get("absent", std::chrono::milliseconds(100)), RdzvError,
                       Catch::Predicate<RdzvError>([](const RdzvError& e) {
                         return e.code() == ErrorCode::deadline_exceeded && std::string(e.what()).starts_with("get (rdzvd ");
                       }));
  CHECK(kv1.queue_pop("q", false, std::chrono::milliseconds(0)) == std::nullopt);  // non-blocking: unary either way

  // Which calls reached the server: one stream per member carries joins and waits, or each is its own call.
  for (const char* method : {"Join", "Wait", "Barrier", "MultiGet"}) {
    INFO(method);
    if (advertised) {
      CHECK(server.calls_of(method) == 0);
    } else {
      CHECK(server.calls_of(method) > 0);
    }
  }
  CHECK(server.calls_of("Get") == (advertised ? 1 : 3));  // the 0 ms get above; blocking gets too without the features
  CHECK(server.calls_of("QueuePop") == (advertised ? 1 : 2));

  // A retried join of the round held keeps the assignment and reports no lost session.
  const auto again = clients[1]->join(count_lost);
  CHECK(again.round == round);
  CHECK(again.rank == assignments[1].rank);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a lost stream would be reported by now
  const auto status = clients[0]->status(true);
  REQUIRE(status.rendezvous.size() == 1);
  CHECK(status.rendezvous[0].members == n);
  for (auto& client : clients) client->leave();
  CHECK(lost == 0);
}

TEST_CASE("client library: a daemon slower than the probe deadline is still found", "[server][client]") {
  InProcessServer server;
  server.delay_calls(std::chrono::milliseconds(1500));  // every answer comes after 1.5 s
  auto options = options_for(server, "patient", 1);
  options.probe_deadline = std::chrono::milliseconds(500);
  options.connect_timeout = std::chrono::seconds(20);
  // With the probe deadline fixed at 0.5 s no probe could ever be answered; it doubles for a peer
  // whose HTTP/2 connection is up (1, then 2 s) and keeps that connection.
  const auto started = std::chrono::steady_clock::now();
  Client client(options);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(15));
  CHECK(client.endpoint() == server.endpoint());
  CHECK(client.join().world_size == 1);  // and it serves this client as any other
}
