// The client library against a server that advertises the one-stream features and against one
// that withholds them (as an older rdzvd would): the same public calls give the same results,
// joining and passing barriers on the Session stream in the first case, with Join and the
// Barrier RPC in the second.
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
