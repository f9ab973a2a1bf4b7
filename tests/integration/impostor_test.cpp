// The attacks on the handshake, reproduced with real processes over loopback: a squatter on the
// daemon's port that records every byte, a fake daemon that answers OK to every call, and a relay
// that forwards Hello to the real daemon. Each time the client must reach the real rdzvd or fail
// at once with an error naming the endpoint, and the attacker must receive neither the token nor
// a ticket.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "impostors.hpp"
#include "llmrdzv/client/client.hpp"
#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/common/token.hpp"
#include "local_ports.hpp"
#include "rdzvd_process.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;

namespace {

constexpr std::uint16_t kRangeSize = 4;
constexpr std::string_view kHello = "/llmrdzv.v1.Rendezvous/Hello";

// Neither the token nor any ticket ("t2." followed by the HMAC) is in what an attacker received.
void check_clean(const Loot& loot, const std::string& token) {
  const std::string received = loot.bytes();
  CHECK(received.find(token) == std::string::npos);
  CHECK(received.find("t2.") == std::string::npos);
}

std::vector<std::string> probing_args(const llmrdzv::PortRange& range) {
  return {"--port-range", std::to_string(range.lo) + "-" + std::to_string(range.hi), "--port-probes",
          std::to_string(kRangeSize)};
}

// A client of `rdzvd` that is told only the base port of `range`, as ranks on other nodes are.
llmrdzv::client::Options probing_options(const RdzvdProcess& rdzvd, const llmrdzv::PortRange& range) {
  auto options = rdzvd.client_options(1);
  options.endpoint = "127.0.0.1:" + std::to_string(range.lo);
  options.port_range = range;
  options.port_probes = kRangeSize;
  return options;
}

const auto denied = [](const RdzvError& e) { return e.code() == ErrorCode::permission_denied; };

}  // namespace

TEST_CASE("a raw squatter on the base port receives no token and the client finds the real rdzvd", "[security]") {
  ScratchDir dir;
  const auto range = free_port_range(kRangeSize);
  RawSquatter squatter(range.lo);
  RdzvdProcess rdzvd(dir, RdzvdConfig{.listen = "127.0.0.1:" + std::to_string(range.lo), .extra_args = probing_args(range)});
  CHECK(rdzvd.port() == llmrdzv::probe_port(range, range.lo, 1));
  Client client(probing_options(rdzvd, range));
  CHECK(client.endpoint() == rdzvd.endpoint());
  const auto assignment = client.join();
  client.kv(assignment.round).set("k", "v");
  client.leave();
  CHECK_FALSE(squatter.loot().bytes().empty());  // the client did knock
  check_clean(squatter.loot(), rdzvd.token());
}

TEST_CASE("a fake daemon that answers OK to everything is refused by name and gets only a Hello", "[security]") {
  ScratchDir dir;
  SECTION("told its endpoint: the client fails at once") {
    FakeDaemon fake;
    RdzvdProcess rdzvd(dir);  // the token a real step would have
    auto options = rdzvd.client_options(1);
    options.endpoint = fake.endpoint();
    const auto start = std::chrono::steady_clock::now();
    try {
      Client client(options);
      FAIL("the fake daemon was accepted");
    } catch (const RdzvError& error) {
      CHECK(error.code() == ErrorCode::permission_denied);
      CHECK_THAT(error.what(), Catch::Contains("rdzvd " + fake.endpoint()) &&
                                   Catch::Contains("did not prove it holds the rendezvous token"));
    }
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    for (const auto& method : fake.loot().methods()) CHECK(method == kHello);
    CHECK_FALSE(fake.loot().methods().empty());
    check_clean(fake.loot(), rdzvd.token());
  }
  SECTION("on the base port: the client passes it by and joins the real rdzvd") {
    const auto range = free_port_range(kRangeSize);
    FakeDaemon fake("127.0.0.1:" + std::to_string(range.lo));
    RdzvdProcess rdzvd(dir, RdzvdConfig{.listen = "127.0.0.1:" + std::to_string(range.lo), .extra_args = probing_args(range)});
    Client client(probing_options(rdzvd, range));
    CHECK(client.endpoint() == rdzvd.endpoint());
    client.join();
    client.leave();
    for (const auto& method : fake.loot().methods()) CHECK(method == kHello);
    check_clean(fake.loot(), rdzvd.token());
  }
}

TEST_CASE("a relay that forwards Hello to the real rdzvd is refused: the credential names the port dialled", "[security]") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  FakeDaemon relay("127.0.0.1:0", rdzvd.endpoint());
  auto options = rdzvd.client_options(1);
  options.endpoint = relay.endpoint();
  CHECK_THROWS_MATCHES(Client(options), RdzvError, Catch::Predicate<RdzvError>(denied));
  try {
    Client client(options);
  } catch (const RdzvError& error) {
    // rdzvd refuses the relayed Hello from its headers: its credential was made for the relay's port.
    CHECK_THAT(error.what(), Catch::Contains("rdzvd " + relay.endpoint()) && Catch::Contains("made for another port") &&
                                 Catch::Contains("relays this port"));
  }
  for (const auto& method : relay.loot().methods()) CHECK(method == kHello);
  check_clean(relay.loot(), rdzvd.token());
  // The real daemon is untouched: a client that dials it directly works.
  Client direct(rdzvd.client_options(1));
  direct.join();
  direct.leave();
}

TEST_CASE("48 concurrent 63 MiB Set calls with a forged ticket are refused from their headers: rdzvd's memory stays put",
          "[security]") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  Client victim(rdzvd.client_options(1));
  const auto round = victim.join().round;
  victim.kv(round).set("before", "1");
  const std::uint64_t idle = resident_bytes(rdzvd.pid());
  REQUIRE(idle > 0);
  std::atomic<bool> flooding{true};
  std::atomic<std::uint64_t> peak{idle};
  std::thread sampler([&] {
    while (flooding) {
      peak = std::max<std::uint64_t>(peak, resident_bytes(rdzvd.pid()));
      std::this_thread::sleep_for(5ms);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  // As in the replay of issue 39: the forged ticket in the body only, then in the metadata too.
  for (const bool forged_metadata : {false, true}) {
    for (const auto& status : forged_set_flood(rdzvd.endpoint(), rdzvd.rdzv_id(), 48, 63u << 20, forged_metadata, 60s)) {
      CHECK(status.error_code() == grpc::StatusCode::PERMISSION_DENIED);
      CHECK_THAT(status.error_message(), Catch::StartsWith(std::string(llmrdzv::kGateRefusalPrefix)));
    }
  }
  const auto took = std::chrono::steady_clock::now() - start;
  flooding = false;
  sampler.join();
  INFO("rdzvd RSS idle " << idle / 1024 << " KiB, peak under the flood " << peak / 1024 << " KiB, flood took "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  // Without the check on headers the same flood took rdzvd from 20 MB to 1.89 GB (48 bodies held).
  CHECK(peak < idle + (32u << 20));
  // The victim's rendezvous works throughout.
  victim.kv(round).set("after", "2");
  CHECK(victim.kv(round).get("after", 1s) == "2");
  victim.leave();
}

namespace {

// rdzv-impostor --kind idle as the unprivileged user nobody (the test runs as root): its
// connections are another uid's, as a second user's on a shared node would be. Returns its
// "held H closed C" line once it holds them; it keeps them until killed.
struct IdleFlood {
  IdleFlood(const ScratchDir& dir, const RdzvdProcess& rdzvd, int count)
      : process({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", LLMRDZV_IMPOSTOR_PATH,
                 "--kind", "idle", "--target", rdzvd.endpoint(), "--count", std::to_string(count)},
                {}, (dir.path() / "impostor.err").string()) {
    const auto line = process.read_line(20s);
    INFO(process.stderr_text());
    REQUIRE(line);
    held_and_closed = *line;
  }
  ChildProcess process;
  std::string held_and_closed;
};

// RSS growth of `rdzvd` while 900 idle connections of another uid are held (under the usual
// 1024-descriptor limit of both processes).
std::uint64_t growth_under_idle_flood(const ScratchDir& dir, RdzvdProcess& rdzvd, std::string& outcome) {
  const std::uint64_t idle = resident_bytes(rdzvd.pid());
  IdleFlood flood(dir, rdzvd, 900);
  outcome = flood.held_and_closed;
  const std::uint64_t held = resident_bytes(rdzvd.pid());
  return held > idle ? held - idle : 0;
}

}  // namespace

TEST_CASE("idle connections of another user: past max_unauthenticated_per_peer the oldest are shut down and rdzvd's "
          "memory stays put",
          "[security]") {
  if (geteuid() != 0) {
    WARN("not root: no second uid to connect as, not tested");
    return;
  }
  ScratchDir dir;
  RdzvdProcess bounded(dir, {.extra_args = {"--max-unauthenticated-per-peer", "32"}});
  // A client of the same uid as the flood, holding its session through it: its connection said
  // Hello, so it no longer counts and is not the oldest one shut down.
  ChildProcess client({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", test_client_path(),
                       "--hold-ms", "6000"},
                      bounded.client_env(1), (dir.path() / "client.err").string());
  for (auto line = client.read_line(20s); line && *line != "barrier rank=0 ok"; line = client.read_line(20s)) {}
  std::string outcome;
  const auto bounded_growth = growth_under_idle_flood(dir, bounded, outcome);
  // Every connection of that uid beyond the newest 32 was shut down as the next one arrived.
  CHECK(outcome == "held 32 closed 868 (the oldest 868 in a row)");
  INFO(client.stderr_text());
  CHECK(client.wait(20s) == 0);
  const auto rest = client.read_remaining_lines(1s);
  CHECK(std::find(rest.begin(), rest.end(), "left rank=0") != rest.end());
  CHECK_THAT(bounded.log(), Catch::Contains("shutting down the oldest connections of uid 65534 (nobody) on this node: "
                                            "it holds 32 that have not said Hello with the token"));
  // The daemon's own uid is not bounded, and its clients work after the flood.
  Client victim(bounded.client_options(1));
  const auto round = victim.join().round;
  victim.kv(round).set("after", "1");
  CHECK(victim.kv(round).get("after", 1s) == "1");
  victim.leave();

  ScratchDir unbounded_dir;
  RdzvdProcess unbounded(unbounded_dir, {.extra_args = {"--max-unauthenticated-per-peer", "0"}});
  const auto unbounded_growth = growth_under_idle_flood(unbounded_dir, unbounded, outcome);
  CHECK(outcome == "held 900 closed 0 (the oldest 0 in a row)");
  INFO("rdzvd RSS growth under 900 idle connections: " << bounded_growth / 1024 << " KiB bounded at 32, "
                                                       << unbounded_growth / 1024 << " KiB unbounded");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine and adds shadow memory: the RSS of an
  // ASan-built rdzvd says nothing about what it holds (the shut-down connections' memory stays
  // resident). The counts above are the behaviour here; the plain build checks the memory.
  WARN("AddressSanitizer build: rdzvd's RSS growth is not compared");
#else
  // About 15 KiB per connection held: 32 against 900.
  CHECK(unbounded_growth > 8u << 20);
  CHECK(bounded_growth * 3 < unbounded_growth);
#endif
}

TEST_CASE("when raw squatters hold every candidate port, a client fails within seconds naming them", "[security]") {
  ScratchDir dir;
  const auto range = free_port_range(kRangeSize);
  std::vector<std::unique_ptr<RawSquatter>> squatters;
  for (std::uint32_t k = 0; k < kRangeSize; ++k) squatters.push_back(std::make_unique<RawSquatter>(range.lo + k));
  RdzvdProcess rdzvd(dir, RdzvdConfig{.listen = "127.0.0.1:0"});  // the token a step would have; unreachable here
  auto options = rdzvd.client_options(1);
  options.endpoint = "127.0.0.1:" + std::to_string(range.lo);
  options.port_range = range;
  options.port_probes = kRangeSize;
  options.connect_timeout = 30s;  // what a step's ranks wait at most
  const auto start = std::chrono::steady_clock::now();
  try {
    Client client(options);
    FAIL("a client found an rdzvd among the squatters");
  } catch (const RdzvError& error) {
    CHECK(error.code() == ErrorCode::unavailable);
    CHECK_THAT(error.what(), Catch::Contains("never speaks HTTP/2") && Catch::Contains("another program holds this port"));
  }
  // Instead of the 30 s connect timeout: a probe deadline and the 2 s each mute peer gets to
  // answer HTTP/2.
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  for (const auto& squatter : squatters) check_clean(squatter->loot(), rdzvd.token());
}
