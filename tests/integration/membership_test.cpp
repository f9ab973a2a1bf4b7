// Rendezvous membership through a real rdzvd and real client processes on loopback: every
// participant of a round gets a distinct rank in 0..N-1, the same world size and round, and the
// store barrier after the join completes for all of them.
#include <catch2/catch.hpp>
#include <set>

#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;

namespace {

// Runs `launch` against a fresh rdzvd and checks the round it forms; returns the assignment lines.
std::vector<std::map<std::string, std::string>> run_round(int world_size, const ClientLaunch& launch) {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto processes = launch_test_clients(dir, rdzvd, world_size, launch);
  const auto assignments = collect_lines(processes, "rank=", launch.participants_per_process, 120s);
  collect_lines(processes, "barrier ", launch.participants_per_process, 60s);

  std::set<int> ranks;
  for (const auto& fields : assignments) {
    ranks.insert(std::stoi(fields.at("rank")));
    CHECK(fields.at("world") == std::to_string(world_size));
    CHECK(fields.at("round") == assignments.front().at("round"));
    CHECK(fields.at("master") == assignments.front().at("master"));
  }
  CHECK(int(ranks.size()) == world_size);
  CHECK(*ranks.begin() == 0);
  CHECK(*ranks.rbegin() == world_size - 1);
  for (auto& process : processes) CHECK(process->wait(30s) == 0);
  return assignments;
}

}  // namespace

TEST_CASE("two client processes form one round with ranks 0 and 1") {
  const auto assignments = run_round(2, ClientLaunch{.processes = 2});
  CHECK(assignments.front().at("round") != "0");
  // Both run on this host: one node, local ranks 0 and 1.
  std::set<std::string> local_ranks;
  for (const auto& fields : assignments) {
    CHECK(fields.at("node_rank") == "0");
    local_ranks.insert(fields.at("local_rank"));
  }
  CHECK(local_ranks == std::set<std::string>{"0", "1"});
}

TEST_CASE("64 client processes form one round with distinct ranks") { run_round(64, ClientLaunch{.processes = 64}); }

TEST_CASE("512 participants in 8 processes, each with its own channel, form one round") {
  run_round(512, ClientLaunch{.processes = 8, .participants_per_process = 64});
}

TEST_CASE("requested ranks (SLURM_PROCID) are honoured") {
  constexpr int kWorld = 8;
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  // Started in the reverse order of the ranks they ask for, so the stable order would differ.
  auto processes = launch_test_clients(dir, rdzvd, kWorld,
                                       ClientLaunch{.processes = kWorld, .env_for = [](int i) {
                                                      return EnvChanges{{"SLURM_PROCID", std::to_string(kWorld - 1 - i)}};
                                                    }});
  for (int i = 0; i < kWorld; ++i) {
    std::vector<std::unique_ptr<ChildProcess>> one;
    one.push_back(std::move(processes[std::size_t(i)]));
    const auto fields = collect_lines(one, "rank=", 1, 60s).front();
    CHECK(fields.at("rank") == std::to_string(kWorld - 1 - i));
    CHECK(one.front()->wait(30s) == 0);
  }
}
