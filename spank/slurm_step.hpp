// What slurmstepd tells the plugin about a step through SPANK: its layout, its first node, the
// job's user and the step's environment. Only meaningful in the remote (slurmstepd) context.
#pragma once

#include <string>

// spank.h has no C linkage guards of its own.
extern "C" {
#include <slurm/spank.h>
}

#include "args.hpp"
#include "rdzvd_launch.hpp"
#include "step_env.hpp"

namespace llmrdzv::spank {

// A SPANK item, or ArgError naming `what`.
template <typename T>
T item(spank_t sp, spank_item_t which, const char* what) {
  T value{};
  if (spank_get_item(sp, which, &value) != ESPANK_SUCCESS) throw ArgError(std::string("cannot read ") + what);
  return value;
}

// A variable of the step's environment, or "" when unset.
std::string getenv_from_job(spank_t sp, const char* name);

// Job and step ids, node and task counts of this step (the batch script step is 1 task, 1 node).
StepLayout read_layout(spank_t sp);

// The step's first node: this node for the batch/interactive step, else the head of the step's
// node list, expanded by Slurm's own hostlist functions (exported by slurmstepd).
std::string first_node(spank_t sp, const StepLayout& layout);

// uid, gid and supplementary groups of the job's owner.
JobUser job_user(spank_t sp);

}  // namespace llmrdzv::spank
