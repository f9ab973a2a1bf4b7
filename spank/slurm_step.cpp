// SPANK reads of a step's facts (see slurm_step.hpp).
#include "slurm_step.hpp"

#include <unistd.h>

#include <cstdlib>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
}

namespace llmrdzv::spank {

std::string getenv_from_job(spank_t sp, const char* name) {
  for (std::size_t size = 4096; size <= (1u << 20); size *= 16) {
    std::vector<char> buffer(size);
    const spank_err_t rc = spank_getenv(sp, name, buffer.data(), int(buffer.size()));
    if (rc == ESPANK_SUCCESS) return buffer.data();
    if (rc != ESPANK_NOSPACE) return {};
  }
  throw ArgError(std::string(name) + " is longer than 1 MiB");
}

StepLayout read_layout(spank_t sp) {
  StepLayout layout;
  layout.job_id = item<uint32_t>(sp, S_JOB_ID, "the job id");
  layout.step_id = item<uint32_t>(sp, S_JOB_STEPID, "the step id");
  layout.nnodes = item<uint32_t>(sp, S_JOB_NNODES, "the node count");
  layout.node_id = item<uint32_t>(sp, S_JOB_NODEID, "the node id");
  layout.ntasks = item<uint32_t>(sp, S_JOB_TOTAL_TASK_COUNT, "the task count");
  layout.local_tasks = item<uint32_t>(sp, S_JOB_LOCAL_TASK_COUNT, "the local task count");
  if (spank_get_item(sp, S_SLURM_RESTART_COUNT, &layout.restarts) != ESPANK_SUCCESS) layout.restarts = 0;
  if (is_script_step(layout.step_id)) {
    // Slurm reports the job's sizes here (measured: 12 tasks for `sbatch -n12`); the script
    // itself is one task on one node.
    layout.nnodes = layout.ntasks = layout.local_tasks = 1;
    layout.node_id = 0;
    return layout;
  }
  // A heterogeneous step (srun A : B) reaches each component's nodes as a step of its own sizes
  // and task ids, while its environment (SLURM_STEP_NUM_TASKS, the node list, SLURM_PROCID)
  // spans the whole step (measured on Slurm 22.05): one world cannot be built from that.
  const std::string step_tasks = getenv_from_job(sp, "SLURM_STEP_NUM_TASKS");
  if (!getenv_from_job(sp, "SLURM_HET_SIZE").empty() && !step_tasks.empty() &&
      step_tasks != std::to_string(layout.ntasks)) {
    throw ArgError("a heterogeneous step (srun ... : ...) is not supported: this component has " +
                   std::to_string(layout.ntasks) + " of the step's " + step_tasks +
                   " tasks; run the components as separate steps, or as one step");
  }
  return layout;
}

std::string first_node(spank_t sp, const StepLayout& layout) {
  if (is_script_step(layout.step_id)) {
    std::string name = getenv_from_job(sp, "SLURMD_NODENAME");
    if (name.empty()) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      name = host;
    }
    return name;
  }
  const std::string nodes = getenv_from_job(sp, "SLURM_STEP_NODELIST");
  if (nodes.empty()) throw ArgError("SLURM_STEP_NODELIST is missing from the step environment");
  // hostlist_t is a pointer type up to Slurm 23.02 and the struct itself from 23.11 on: auto*
  // names the pointer either way.
  auto* list = slurm_hostlist_create(nodes.c_str());
  if (list == nullptr) throw ArgError("cannot expand the node list '" + nodes + "'");
  char* head = slurm_hostlist_shift(list);
  std::string name = head ? head : "";
  free(head);
  slurm_hostlist_destroy(list);
  if (name.empty()) throw ArgError("empty node list '" + nodes + "'");
  return name;
}

JobUser job_user(spank_t sp) {
  JobUser user;
  user.uid = item<uid_t>(sp, S_JOB_UID, "the job's uid");
  user.gid = item<gid_t>(sp, S_JOB_GID, "the job's gid");
  gid_t* groups = nullptr;
  int count = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &count) == ESPANK_SUCCESS && groups) {
    user.groups.assign(groups, groups + count);
  }
  return user;
}

}  // namespace llmrdzv::spank
