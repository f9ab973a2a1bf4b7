// Step-port probing end to end: with the base port taken by a foreign socket and the next one by
// an rdzvd of another rendezvous, our rdzvd binds the third candidate, and a client given only the
// base port and the range finds it, also when it starts before the daemon is up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <random>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/common/token.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;

namespace {

constexpr std::uint16_t kRangeSize = 8;

// A listening TCP socket on 127.0.0.1:port that never accepts, or -1 if the port is taken.
int listen_on(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A range of kRangeSize free ports below the ephemeral range, so nothing else grabs them mid-test.
llmrdzv::PortRange free_range() {
  std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto lo = std::uint16_t(std::uniform_int_distribution<int>(20000, 32000)(random));
    bool all_free = true;
    for (std::uint16_t port = lo; port < lo + kRangeSize && all_free; ++port) {
      const int fd = listen_on(port);
      all_free = fd >= 0;
      if (fd >= 0) close(fd);
    }
    if (all_free) return {lo, std::uint16_t(lo + kRangeSize - 1)};
  }
  FAIL("no free port range found");
  return {};
}

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
