// The env contract (llm-rdzv(8), ENVIRONMENT) for one step and its tasks, computed from the step layout and
// settings. Pure: the SPANK glue supplies the layout, the first node's address and the token.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "step_settings.hpp"

namespace llmrdzv::spank {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct StepLayout {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::uint32_t nnodes = 1;
  std::uint32_t node_id = 0;
  std::uint32_t ntasks = 1;
  std::uint32_t local_tasks = 1;
  std::uint32_t restarts = 0;  // how often the job was requeued
};

// Slurm's batch script and interactive (salloc) steps: one node, no srun before them.
bool is_script_step(std::uint32_t step_id);
// The extern step holds no tasks: nothing to do there.
bool is_extern_step(std::uint32_t step_id);

// "<job>.<step>" ("<job>.batch", "<job>.interactive"), with ".r<N>" after the job's N-th requeue
// (a requeued job keeps its id and numbers its steps from 0 again, and a site rdzvd may still hold
// the earlier run's rendezvous), or the user's id=NAME.
std::string rendezvous_id(const StepSettings& settings, std::uint32_t job_id, std::uint32_t step_id,
                          std::uint32_t restarts = 0);

struct StepPorts {
  std::uint16_t rdzvd = 0;
  std::uint16_t master = 0;
};
// The candidate ports from rdzvd's base port that MASTER_PORT keeps out of: port_probes, or in a
// range with no more ports than that, all but one (rdzvd then walks onto MASTER_PORT only after
// every other port of the range was taken).
std::uint32_t probe_window(const PortRange& range, std::uint32_t port_probes);
// srun picks the step's ports at random inside the range (`random` is 64 bits from the kernel's
// generator): rdzvd's base port, and MASTER_PORT outside the probe window that follows it, so
// that an rdzvd walking past busy ports does not take its own step's MASTER_PORT. They reach every
// node's slurmstepd the way the token travels, as "RDZVD,MASTER" (ports_text / parse_ports_text).
// parse_ports_text throws ArgError for text that is not two different ports inside `range`.
StepPorts random_step_ports(const PortRange& range, std::uint32_t port_probes, std::uint64_t random);
// random_step_ports with 64 bits from the kernel's generator: srun's draw for its steps, and the
// draw of a step no srun started (the batch script, salloc's interactive step), which runs on
// one node whose slurmstepd sets both ports itself: nobody can compute them from squeue.
StepPorts draw_step_ports(const PortRange& range, std::uint32_t port_probes);
std::string ports_text(const StepPorts& ports);
StepPorts parse_ports_text(const std::string& text, const PortRange& range);

// Participant bounds: the step's task count, or nodes=MIN:MAX times the tasks per node (the script
// step and steps with uneven tasks per node: the task count).
struct WorldBounds {
  std::uint32_t min = 0;
  std::uint32_t max = 0;
};
WorldBounds world_bounds(const StepSettings& settings, const StepLayout& layout);
// Throws ArgError when nodes=MIN:MAX does not admit the step's node count: with fewer nodes than
// MIN the round could never form (the ranks would wait out the whole timeout), with more than MAX
// the rendezvous would turn ranks away; or when the step's tasks are spread unevenly over its nodes
// and the bounds are not exactly its node count. The script step is not checked: an sbatch
// option's nodes= is for the srun steps inside the job.
void check_node_bounds(const StepSettings& settings, const StepLayout& layout);

// Everything but the per-task variables, for a step using `ports`. `site_server` (HOST:PORT) is
// used in site mode; there LLM_RDZV_PORT_RANGE is its one port, so clients do not probe the step
// range.
EnvList step_env(const StepSettings& settings, const StepLayout& layout, const StepPorts& ports,
                 const std::string& master_addr, const std::string& site_server, const std::string& token);

// RANK and LOCAL_RANK of one task.
EnvList task_env(std::uint32_t rank, std::uint32_t local_rank);

// The name of every variable step_env and task_env set: a step run with --llm-rdzv=off inside a
// job that has the option removes them from its tasks, which would otherwise inherit the batch
// step's (RANK=0, WORLD_SIZE=1, its token).
std::vector<std::string> contract_variables();

}  // namespace llmrdzv::spank
