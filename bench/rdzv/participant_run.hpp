// One measured run of N rendezvous participants, each a Client with its own channel and its own
// thread: all connect first (not timed), then, released together, every participant makes one
// trivial call (the baseline phase: the cost of N concurrent calls on this machine), and, released
// together again, joins the round and passes a store barrier (add on one key; the last arrival sets
// a done key everyone waits for).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace llmrdzv::bench {

struct RunConfig {
  int participants = 8;
  std::string endpoint;
  std::string rdzv_id;
  std::string token;
  std::chrono::seconds timeout{120};
};

struct RunResult {
  std::vector<double> baseline_ms;  // per participant: one unscoped Status call
  std::vector<double> join_ms;      // per participant: release -> join returned
  std::vector<double> total_ms;     // per participant: release -> barrier passed
  double baseline_wall_ms = 0;      // release -> last baseline call done
  double wall_ms = 0;               // release -> last participant through the barrier
  double connect_wall_ms = 0;       // making all clients (not part of the target)
};

// Throws std::runtime_error naming the first participant error.
RunResult run_participants(const RunConfig& config);

}  // namespace llmrdzv::bench
