// Failures with real processes: a member killed with SIGKILL or frozen with SIGSTOP is reported
// to every survivor as MEMBER_FAILED within the heartbeat timeout, and SIGTERM of rdzvd gives
// blocked clients a clear error and sessions a SHUTDOWN event promptly, never a hang.
#include <signal.h>

#include <catch2/catch.hpp>
#include <future>
#include <mutex>

#include "llmrdzv/client/client.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;

namespace {

constexpr int kWorld = 4;
constexpr auto kHeartbeatTimeout = 1500ms;

struct HeldRound {
  ScratchDir dir;
  std::unique_ptr<RdzvdProcess> rdzvd;
  std::vector<std::unique_ptr<ChildProcess>> processes;
  std::vector<int> ranks;  // rank of each process
};

// kWorld single-participant processes that joined, passed the barrier and hold their sessions.
std::unique_ptr<HeldRound> hold_round() {
  auto held = std::make_unique<HeldRound>();
  held->rdzvd = std::make_unique<RdzvdProcess>(
      held->dir, RdzvdConfig{.heartbeat_interval = 100ms, .heartbeat_timeout = kHeartbeatTimeout});
  held->processes = launch_test_clients(held->dir, *held->rdzvd, kWorld,
                                        ClientLaunch{.processes = kWorld, .args = {"--hold-ms", "60000"}});
  for (auto& process : held->processes) {
    std::vector<std::unique_ptr<ChildProcess>> one;
    one.push_back(std::move(process));
    held->ranks.push_back(std::stoi(collect_lines(one, "rank=", 1, 60s).front().at("rank")));
    process = std::move(one.front());
  }
  collect_lines(held->processes, "barrier ", 1, 30s);
  return held;
}

// Waits for each process except `skip` to print an event line; returns the events' fields and
// the longest time any of them took.
std::pair<std::vector<std::map<std::string, std::string>>, std::chrono::milliseconds> survivor_events(
    HeldRound& held, std::size_t skip, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::map<std::string, std::string>> events;
  std::chrono::milliseconds slowest{0};
  for (std::size_t i = 0; i < held.processes.size(); ++i) {
    if (i == skip) continue;
    std::vector<std::unique_ptr<ChildProcess>> one;
    one.push_back(std::move(held.processes[i]));
    events.push_back(collect_lines(one, "event=", 1, timeout).front());
    slowest = std::max(slowest, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start));
    held.processes[i] = std::move(one.front());
  }
  return {events, slowest};
}

}  // namespace

TEST_CASE("kill -9 of one client process: every survivor hears MEMBER_FAILED within the heartbeat timeout") {
  auto held = hold_round();
  held->processes[1]->send_signal(SIGKILL);
  const auto [events, slowest] = survivor_events(*held, 1, 10s);
  for (const auto& event : events) {
    CHECK(event.at("event") == "member_failed");
    CHECK(event.at("rank") == std::to_string(held->ranks[1]));
  }
  CHECK(slowest < kHeartbeatTimeout);
  for (std::size_t i = 0; i < held->processes.size(); ++i) {
    if (i != 1) CHECK(held->processes[i]->wait(10s) == 0);
  }
}

TEST_CASE("a frozen client (SIGSTOP) is declared failed once its heartbeats stop for the timeout") {
  auto held = hold_round();
  held->processes[2]->send_signal(SIGSTOP);
  const auto [events, slowest] = survivor_events(*held, 2, 10s);
  for (const auto& event : events) {
    CHECK(event.at("event") == "member_failed");
    CHECK(event.at("rank") == std::to_string(held->ranks[2]));
  }
  // Detected by heartbeat silence: not before the timeout (minus one interval of slack for
  // the last heartbeat's age), not long after it.
  CHECK(slowest >= kHeartbeatTimeout - 200ms);
  CHECK(slowest < kHeartbeatTimeout + 1500ms);
  held->processes[2]->send_signal(SIGKILL);
}

TEST_CASE("SIGTERM of rdzvd: blocked calls fail promptly with unavailable, sessions hear SHUTDOWN") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto processes = launch_test_clients(dir, rdzvd, 3, ClientLaunch{.processes = 2, .args = {"--hold-ms", "60000"}});
  auto options = rdzvd.client_options(3);
  options.connect_timeout = 1s;
  Client client(options);
  std::promise<void> shutdown_heard;
  const auto assignment = client.join([&](const llmrdzv::client::SessionEvent& event) {
    if (event.kind == llmrdzv::client::SessionEvent::Kind::shutdown) shutdown_heard.set_value();
  });
  client.kv(assignment.round).barrier("rdzv-test-client/barrier", 3, 30s);
  collect_lines(processes, "barrier ", 1, 30s);

  auto blocked_get = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    try {
      client.kv(assignment.round).get("never-set", 60s);
    } catch (const RdzvError& error) {
      return std::make_pair(error.code(), std::chrono::steady_clock::now() - start);
    }
    return std::make_pair(ErrorCode::internal, std::chrono::steady_clock::now() - start);
  });
  std::this_thread::sleep_for(200ms);  // let the get reach the daemon
  const auto stop_start = std::chrono::steady_clock::now();
  rdzvd.send_signal(SIGTERM);

  REQUIRE(blocked_get.wait_for(10s) == std::future_status::ready);
  const auto [code, waited] = blocked_get.get();
  CHECK(code == ErrorCode::unavailable);
  CHECK(std::chrono::steady_clock::now() - stop_start < 5s);
  CHECK(shutdown_heard.get_future().wait_for(5s) == std::future_status::ready);
  for (const auto& event : collect_lines(processes, "event=", 1, 5s)) CHECK(event.at("event") == "shutdown");
  CHECK(rdzvd.wait(10s) == 0);

  // With the daemon gone, a new client gets a clear error after its connect timeout.
  try {
    Client late(options);
    FAIL("connected to a stopped rdzvd");
  } catch (const RdzvError& error) {
    CHECK(error.code() == ErrorCode::unavailable);
    CHECK_THAT(error.what(), Catch::Contains("no rdzvd serving rendezvous 'it.0' answered within 1000 ms"));
  }
}

TEST_CASE("kill -9 of rdzvd: the session reports the lost stream and calls fail with unavailable") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto options = rdzvd.client_options(1);
  options.retry_budget = 500ms;
  Client client(options);
  std::promise<llmrdzv::client::SessionEvent> lost;
  std::once_flag first_event;
  const auto assignment = client.join([&](const llmrdzv::client::SessionEvent& event) {
    std::call_once(first_event, [&] { lost.set_value(event); });
  });
  rdzvd.send_signal(SIGKILL);
  auto lost_event = lost.get_future();
  REQUIRE(lost_event.wait_for(5s) == std::future_status::ready);
  const auto event = lost_event.get();
  CHECK(event.kind == llmrdzv::client::SessionEvent::Kind::stream_lost);
  CHECK(event.round == assignment.round);
  CHECK_THAT(event.detail, Catch::Contains("session stream to rdzvd " + rdzvd.endpoint() + " ended"));

  const auto start = std::chrono::steady_clock::now();
  try {
    client.kv(assignment.round).get("k", 10s);
    FAIL("get succeeded against a dead rdzvd");
  } catch (const RdzvError& error) {
    CHECK(error.code() == ErrorCode::unavailable);
    CHECK_THAT(error.what(), Catch::Contains("get (rdzvd " + rdzvd.endpoint() + "): unavailable"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);  // the retry budget, not the get's timeout
}
