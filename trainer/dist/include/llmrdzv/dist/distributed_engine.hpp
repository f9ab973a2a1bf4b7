// The many-rank TrainingEngine (train/training_engine.hpp): joins the rendezvous through rdzvd,
// builds the process group over an RdzvStore, broadcasts rank 0's initial weights, synchronises
// gradients in buckets overlapped with backward, and steps either torch's AdamW on every rank
// (--offload none) or the sharded host AdamW (--offload optimizer). A rank that fails ends the
// others promptly with a clear message and exit code kPeerFailedExitCode.
#pragma once

#include <memory>

#include "llmrdzv/dist/process_group.hpp"
#include "llmrdzv/train/options.hpp"
#include "llmrdzv/train/training_engine.hpp"

namespace llmrdzv::client {
class Client;
}

namespace llmrdzv::dist {

// Exit status of a rank that stops because another rank failed or its round closed.
inline constexpr int kPeerFailedExitCode = 3;

// True when the env contract names a rendezvous (RDZV_ENDPOINT is set).
bool rendezvous_env_present();

// From the env contract (client::Options::from_env: RDZV_ENDPOINT, RDZV_ID, RDZV_TOKEN, RANK /
// SLURM_PROCID, WORLD_SIZE, LOCAL_RANK, ...). Device: cuda:<local rank> when CUDA is available
// and not options.use_cpu, else the CPU. Throws client::RdzvError / std::runtime_error naming
// the problem when the env is incomplete or the rendezvous fails.
std::unique_ptr<train::TrainingEngine> make_distributed_engine(const train::TrainOptions& options,
                                                               const ProcessGroupSettings& settings = {});

// Same, with a client the caller already made (not joined yet).
std::unique_ptr<train::TrainingEngine> make_distributed_engine(
    const train::TrainOptions& options, std::shared_ptr<client::Client> client,
    const ProcessGroupSettings& settings = {});

}  // namespace llmrdzv::dist
