// Step-port probing end to end: with the base port taken by a foreign socket and the next one by
// an rdzvd of another rendezvous, our rdzvd binds the third candidate, and a client given only the
// base port and the range finds it, also when it starts before the daemon is up.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <future>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/common/token.hpp"
#include "local_ports.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;

namespace {

constexpr std::uint16_t kRangeSize = 8;

// A range of kRangeSize free ports.
llmrdzv::PortRange free_range() { return free_port_range(kRangeSize); }

std::vector<std::string> probing_args(const llmrdzv::PortRange& range) {
  return {"--port-range", std::to_string(range.lo) + "-" + std::to_string(range.hi), "--port-probes",
          std::to_string(kRangeSize)};
}

}  // namespace

TEST_CASE("a foreign socket and another rendezvous' rdzvd are skipped by daemon and client") {
  ScratchDir dir;
  const auto range = free_range();
  const std::uint16_t base = range.lo;
  const int foreign = listen_on(base);
  REQUIRE(foreign >= 0);

  RdzvdProcess other(dir, RdzvdConfig{.rdzv_id = "other.0",
                                      .listen = "127.0.0.1:" + std::to_string(base),
                                      .extra_args = probing_args(range)});
  CHECK(other.port() == llmrdzv::probe_port(range, base, 1));
  RdzvdProcess ours(dir, RdzvdConfig{.rdzv_id = "ours.0",
                                     .listen = "127.0.0.1:" + std::to_string(base),
                                     .extra_args = probing_args(range)});
  CHECK(ours.port() == llmrdzv::probe_port(range, base, 2));

  auto options = ours.client_options(2);
  options.endpoint = "127.0.0.1:" + std::to_string(base);
  options.port_range = range;
  options.port_probes = kRangeSize;
  Client client(options);
  CHECK(client.endpoint() == ours.endpoint());

  // A test-client process finds it through the env contract alone.
  auto processes = launch_test_clients(dir, ours, 2, ClientLaunch{.processes = 1, .env_for = [&](int) {
                                                                    return EnvChanges{
                                                                        {"RDZV_ENDPOINT", options.endpoint},
                                                                        {"LLM_RDZV_PORT_RANGE", std::to_string(range.lo) + "-" + std::to_string(range.hi)}};
                                                                  }});
  const auto assignment = client.join();
  client.kv(assignment.round).barrier("rdzv-test-client/barrier", 2, 30s);
  const auto line = collect_lines(processes, "rank=", 1, 30s).front();
  CHECK(line.at("round") == std::to_string(assignment.round));
  CHECK(line.at("rank") == std::to_string(1 - assignment.rank));
  CHECK(processes.front()->wait(30s) == 0);
  close(foreign);
}

TEST_CASE("a client walks as many candidate ports as LLM_RDZV_PORT_PROBES says, past the default 8") {
  ScratchDir dir;
  constexpr std::uint32_t kProbes = 12;
  const auto range = free_port_range(kProbes);
  std::vector<int> squatters;  // the first 9 candidates are busy: rdzvd binds the 10th
  for (std::uint32_t k = 0; k < 9; ++k) squatters.push_back(listen_on(llmrdzv::probe_port(range, range.lo, k)));
  REQUIRE(std::ranges::count(squatters, -1) == 0);
  RdzvdProcess far(dir, RdzvdConfig{.rdzv_id = "far.0",
                                    .listen = "127.0.0.1:" + std::to_string(range.lo),
                                    .extra_args = {"--port-range", std::to_string(range.lo) + "-" + std::to_string(range.hi),
                                                   "--port-probes", std::to_string(kProbes)}});
  REQUIRE(far.port() == llmrdzv::probe_port(range, range.lo, 9));

  // With the default 8 candidates the daemon is out of reach.
  auto options = far.client_options(1);
  options.endpoint = "127.0.0.1:" + std::to_string(range.lo);
  options.port_range = range;
  options.connect_timeout = 2s;
  CHECK_THROWS(Client(options));
  // A test-client process given LLM_RDZV_PORT_PROBES=12 reaches the 10th candidate and completes
  // a one-member rendezvous.
  auto processes = launch_test_clients(dir, far, 1, ClientLaunch{.processes = 1, .env_for = [&](int) {
    return EnvChanges{{"RDZV_ENDPOINT", options.endpoint},
                      {"LLM_RDZV_PORT_RANGE", std::to_string(range.lo) + "-" + std::to_string(range.hi)},
                      {"LLM_RDZV_PORT_PROBES", std::to_string(kProbes)}};
  }});
  CHECK(collect_lines(processes, "rank=", 1, 30s).front().at("world") == "1");
  CHECK(processes.front()->wait(30s) == 0);
  for (int fd : squatters) close(fd);
}

TEST_CASE("a client that starts before rdzvd keeps probing until the daemon is up") {
  ScratchDir dir;
  const auto range = free_range();
  const std::string base_endpoint = "127.0.0.1:" + std::to_string(range.lo);
  const RdzvdConfig config{.rdzv_id = "late.0", .token = llmrdzv::make_random_token(), .listen = base_endpoint,
                           .extra_args = probing_args(range)};
  llmrdzv::client::Options options;
  options.endpoint = base_endpoint;
  options.rdzv_id = config.rdzv_id;
  options.token = config.token;
  options.port_range = range;
  options.port_probes = kRangeSize;
  options.connect_timeout = 20s;
  auto connecting = std::async(std::launch::async, [&] { return Client(options).endpoint(); });
  std::this_thread::sleep_for(500ms);  // the client is cycling over refused ports now
  CHECK(connecting.wait_for(0ms) == std::future_status::timeout);
  const int squatter = listen_on(range.lo);  // the base is busy, so rdzvd lands on the next port
  REQUIRE(squatter >= 0);
  RdzvdProcess late(dir, config);
  REQUIRE(connecting.wait_for(25s) == std::future_status::ready);
  CHECK(connecting.get() == late.endpoint());
  close(squatter);
}
