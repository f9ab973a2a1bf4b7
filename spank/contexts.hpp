// The plugin's work in each SPANK context, one file each (context_*.cpp); plugin.cpp only
// dispatches Slurm's entry points to them.
//   allocator (sbatch/salloc): check the option, so a bad #SBATCH --llm-rdzv fails at submit;
//   local (srun):              check the option, make the step's random token and ports;
//   remote (slurmstepd):       compute the env contract, start rdzvd on the step's first node
//                              before any task, set the env in every task, and after the node's
//                              last task let rdzvd drain until no rank of any node remains.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace llmrdzv::spank {

// sbatch/salloc, after the options: throws ArgError for an option the steps could not use.
void check_allocation();

// srun, after the options: the step's token and random ports for its slurmstepds.
void prepare_local();

// slurmstepd, after the options: the step's env contract and, on its first node, rdzvd.
void prepare_remote(spank_t sp);
// slurmstepd, for each task before exec: its env (or the failure of prepare_remote).
int init_task(spank_t sp);
// slurmstepd, for each task's exit: after the node's last task, rdzvd drains.
void task_exited();
// slurmstepd's end: stops an rdzvd that is still running.
void finish_remote();

}  // namespace llmrdzv::spank
