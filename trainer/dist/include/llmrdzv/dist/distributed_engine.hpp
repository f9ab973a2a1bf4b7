// The many-rank TrainingEngine (engine/training_engine.hpp): joins the rendezvous through rdzvd,
// builds the process group over an RdzvStore, broadcasts rank 0's initial weights, synchronises
// gradients in buckets overlapped with backward, and steps either the one-process engine's
// optimizer on every rank (--offload none: the fused SIMD AdamW on CPUs, torch's on GPUs) or the
// sharded host AdamW (--offload optimizer). A rank that fails ends the
// others promptly with a clear message and exit code kPeerFailedExitCode, or, when the
// rendezvous is elastic, restarts them into the next round (see ElasticRestart).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "llmrdzv/dist/process_group.hpp"
#include "llmrdzv/engine/engine_options.hpp"
#include "llmrdzv/engine/training_engine.hpp"

namespace llmrdzv::client {
class Client;
}

namespace llmrdzv::dist {

// Exit status of a rank that stops because another rank failed or its round closed.
inline constexpr int kPeerFailedExitCode = 3;

// True when the env contract names a rendezvous (RDZV_ENDPOINT is set).
bool rendezvous_env_present();

// True when that rendezvous is elastic (LLM_RDZV_MIN_WORLD < LLM_RDZV_MAX_WORLD): the survivors of
// a failed rank restart from the newest checkpoint, or from step 0 without one.
bool rendezvous_env_elastic();

// In-process elastic restart. When the rendezvous is elastic (LLM_RDZV_MIN_WORLD <
// LLM_RDZV_MAX_WORLD) and another rank fails, rdzvd closes the round and this rank cannot go on:
// its process group has a dead peer, and Gloo cannot abort a collective. So the failure watch
// re-executes the trainer (execve of /proc/self/exe with the same `argv`, and
// LLM_RDZV_RESTART_COUNT / LLM_RDZV_RESTART_REASON in its environment), which drops every stuck
// collective thread; the new process joins the next round (rdzvd completes it after the last-call
// timeout once the minimum of ranks re-joined) and builds a process group of the new world size;
// the trainer then resumes from the newest complete checkpoint, which rank 0 picks for all (so
// ranks that looked at the directory a moment apart cannot disagree), or starts over when there is
// none. One line per rank says so: "trainer: rank R: rank X failed in round N; re-joining the
// rendezvous, resuming from checkpoint-S (restart k of M)". After M restarts
// (LLM_RDZV_MAX_RESTARTS, default 3, like torchrun's --max_restarts) a failure ends the rank with
// kPeerFailedExitCode, and so does a re-join that fails (too few ranks came back before the join
// timeout: RejoinError).
struct ElasticRestart {
  std::vector<std::string> argv;  // this process's command line, argv[0] first
  // The newest checkpoint ("checkpoint-S") for the restart message, or nullopt; called on the
  // session thread when a peer fails. Throwing stops the restart (exit kPeerFailedExitCode).
  std::function<std::optional<std::string>()> latest_checkpoint;
};

// What a (re-executed) rank knows about its restarts, from the environment the restart sets.
struct RestartBudget {
  int done = 0;              // LLM_RDZV_RESTART_COUNT: restarts before this process (0 at first)
  int max = 3;               // LLM_RDZV_MAX_RESTARTS
  std::string last_failure;  // LLM_RDZV_RESTART_REASON: "rank X failed in round N"
};
// Throws std::invalid_argument naming a malformed variable.
RestartBudget restart_budget_from_env();

// A restarted rank could not re-join: the message says after which failure and why (the next
// round did not form within the join timeout: fewer than the minimum of ranks came back).
class RejoinError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// For a caller that caught an error: when this process' failure watch is already ending it
// (exit or restart after a peer failed), waits for that instead of returning, so the error (a
// collective broken by the dead peer) is not reported as this rank's own.
void yield_to_failure_watch();

// From the env contract (client::Options::from_env: RDZV_ENDPOINT, RDZV_ID, RDZV_TOKEN, RANK /
// SLURM_PROCID, WORLD_SIZE, LOCAL_RANK, ...). Device: when CUDA is available and not
// options.use_cpu, the visible GPU cuda_device_for(local rank) picks (rank_resources.hpp), else
// the CPU. With --threads 0 and no OMP_NUM_THREADS, ranks sharing a node share its cores. Throws client::RdzvError / std::runtime_error naming
// the problem when the env is incomplete or the rendezvous fails.
std::unique_ptr<engine::TrainingEngine> make_distributed_engine(const engine::EngineOptions& options,
                                                                const ProcessGroupSettings& settings = {});

// Same, and in an elastic rendezvous a peer failure restarts this rank (see ElasticRestart).
// Throws RejoinError when a restarted rank cannot re-join.
std::unique_ptr<engine::TrainingEngine> make_distributed_engine(const engine::EngineOptions& options,
                                                                ElasticRestart restart,
                                                                const ProcessGroupSettings& settings = {});

// Same as the first, with a client the caller already made (not joined yet).
std::unique_ptr<engine::TrainingEngine> make_distributed_engine(
    const engine::EngineOptions& options, std::shared_ptr<client::Client> client,
    const ProcessGroupSettings& settings = {});

}  // namespace llmrdzv::dist
