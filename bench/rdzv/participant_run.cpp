// Threads, release gates and timing of a benchmark run (see participant_run.hpp).
#include "participant_run.hpp"

#include <barrier>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "llmrdzv/client/client.hpp"

namespace llmrdzv::bench {
namespace {

using Clock = std::chrono::steady_clock;
using client::Client;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

RunResult run_participants(const RunConfig& config) {
  const auto n = std::size_t(config.participants);
  RunResult result;
  result.baseline_ms.resize(n);
  result.join_ms.resize(n);
  result.total_ms.resize(n);

  const auto connect_start = Clock::now();
  std::vector<std::unique_ptr<Client>> clients;
  for (std::size_t i = 0; i < n; ++i) {
    client::Options options;
    options.endpoint = config.endpoint;
    options.rdzv_id = config.rdzv_id;
    options.token = config.token;
    options.participant_id = "bench-" + std::to_string(i);
    options.host = "bench-host-" + std::to_string(i % 8);  // as if 8 nodes
    options.min_world = options.max_world = config.participants;
    options.join_timeout = config.timeout;
    options.call_deadline = config.timeout;
    clients.push_back(std::make_unique<Client>(options));
  }
  result.connect_wall_ms = ms_between(connect_start, Clock::now());

  // Phase gates: every thread arrives, the last arrival stamps the release time.
  Clock::time_point release;
  auto stamp = [&release]() noexcept { release = Clock::now(); };
  std::barrier gate(std::ptrdiff_t(n), stamp);
  std::mutex error_mutex;
  std::string first_error;
  const std::string barrier_key = "bench/arrived";
  const std::string done_key = "bench/done";

  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      Client& client = *clients[i];
      const auto record = [&](const std::exception& error) {
        std::lock_guard lock(error_mutex);
        if (first_error.empty()) first_error = "participant " + std::to_string(i) + ": " + error.what();
      };
      bool ok = true;
      gate.arrive_and_wait();
      try {
        client.status(false);
        result.baseline_ms[i] = ms_between(release, Clock::now());
      } catch (const std::exception& error) {
        record(error);
        ok = false;
      }
      gate.arrive_and_wait();  // every thread arrives, even after an error, so none waits forever
      if (!ok) return;
      try {
        const auto assignment = client.join();
        result.join_ms[i] = ms_between(release, Clock::now());
        const auto space = client.kv(assignment.round);
        if (space.add(barrier_key, 1) == assignment.world_size) space.set(done_key, "1");
        space.wait({done_key}, config.timeout);
        result.total_ms[i] = ms_between(release, Clock::now());
      } catch (const std::exception& error) {
        record(error);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (!first_error.empty()) throw std::runtime_error(first_error);
  for (std::size_t i = 0; i < n; ++i) {
    result.baseline_wall_ms = std::max(result.baseline_wall_ms, result.baseline_ms[i]);
    result.wall_ms = std::max(result.wall_ms, result.total_ms[i]);
  }
  for (auto& c : clients) c->leave();
  return result;
}

}  // namespace llmrdzv::bench
