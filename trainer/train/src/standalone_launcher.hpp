// `trainer --nproc N`: training on one machine without Slurm, like torchrun --standalone. Starts a
// private step-mode rdzvd on loopback (random id and token, --exit-with-parent) and N copies of this
// trainer with the env contract srun --llm-rdzv would give them (RDZV_*, RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, NNODES), waits for them, and stops the rest when one
// fails. Torch-free: it only forks, execs and waits.
#pragma once

#include <string>
#include <vector>

namespace llmrdzv::train {

// Whether the environment already names a rendezvous (srun --llm-rdzv or a launcher).
bool rendezvous_in_environment();

// Runs the ranks with `args` (the trainer's own arguments; "--nproc 0" is appended so the ranks
// train instead of launching). Returns the exit status for main: 0 when every rank succeeded,
// else the first failing rank's status (128 + signal for a signal). Throws std::runtime_error
// when rdzvd cannot be found or started.
int run_standalone(const std::vector<std::string>& args, int nproc);

}  // namespace llmrdzv::train
