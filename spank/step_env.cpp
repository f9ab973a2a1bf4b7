// Builds the task environment (see step_env.hpp).
#include "step_env.hpp"

#include <algorithm>
#include <string>

#include "llmrdzv/common/token.hpp"

#include <slurm/slurm.h>

namespace llmrdzv::spank {

bool is_script_step(std::uint32_t step_id) {
  return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_INTERACTIVE_STEP;
}

bool is_extern_step(std::uint32_t step_id) { return step_id == SLURM_EXTERN_CONT; }

std::string rendezvous_id(const StepSettings& settings, std::uint32_t job_id, std::uint32_t step_id,
                          std::uint32_t restarts) {
  if (settings.id) return *settings.id;
  const std::string job = std::to_string(job_id) + ".";
  std::string id = step_id == SLURM_BATCH_SCRIPT       ? job + "batch"
                   : step_id == SLURM_INTERACTIVE_STEP ? job + "interactive"
                                                       : job + std::to_string(step_id);
  if (restarts > 0) id += ".r" + std::to_string(restarts);
  return id;
}

std::uint32_t probe_window(const PortRange& range, std::uint32_t port_probes) {
  return std::min(port_probes, range.size() - 1);  // a range has at least 2 ports (parse_step_ports)
}

StepPorts random_step_ports(const PortRange& range, std::uint32_t port_probes, std::uint64_t random) {
  const std::uint32_t size = range.size();
  const std::uint32_t window = probe_window(range, port_probes);
  StepPorts ports;
  ports.rdzvd = std::uint16_t(range.lo + random % size);
  // The master port: any port of the range past rdzvd's probe window, uniformly.
  const std::uint32_t offset = window + std::uint32_t((random / size) % (size - window));
  ports.master = std::uint16_t(range.lo + (ports.rdzvd - range.lo + offset) % size);
  return ports;
}

StepPorts draw_step_ports(const PortRange& range, std::uint32_t port_probes) {
  return random_step_ports(range, port_probes, std::stoull(make_random_token().substr(0, 16), nullptr, 16));
}

std::string ports_text(const StepPorts& ports) {
  return std::to_string(ports.rdzvd) + "," + std::to_string(ports.master);
}

StepPorts parse_ports_text(const std::string& text, const PortRange& range) {
  const auto comma = text.find(',');
  const auto bad = [&]() -> StepPorts {
    throw ArgError("the step's ports from srun ('" + text + "') are not two different ports in " + describe(range));
  };
  if (comma == std::string::npos) return bad();
  StepPorts ports;
  try {
    ports.rdzvd = std::uint16_t(parse_count("ports", text.substr(0, comma), range.lo, range.hi));
    ports.master = std::uint16_t(parse_count("ports", text.substr(comma + 1), range.lo, range.hi));
  } catch (const ArgError&) {
    return bad();
  }
  if (ports.rdzvd == ports.master) return bad();
  return ports;
}

namespace {

// Whether this node holds as many tasks as every node would with the step's tasks spread evenly
// (each node sees only its own count, so a node that differs refuses; one that matches while
// others differ is refused by them).
bool evenly_spread(const StepLayout& layout) {
  return layout.ntasks % layout.nnodes == 0 && layout.local_tasks * layout.nnodes == layout.ntasks;
}

}  // namespace

WorldBounds world_bounds(const StepSettings& settings, const StepLayout& layout) {
  // The script step is one task: nodes= given to sbatch is for the job's steps, not the script.
  if (!settings.nodes || is_script_step(layout.step_id) || !evenly_spread(layout)) {
    return {layout.ntasks, layout.ntasks};  // uneven tasks per node: only nodes=N with N nodes passes the check
  }
  const std::uint32_t per_node = layout.ntasks / layout.nnodes;
  return {settings.nodes->min * per_node, settings.nodes->max * per_node};
}

EnvList step_env(const StepSettings& settings, const StepLayout& layout, const StepPorts& ports,
                 const std::string& master_addr, const std::string& site_server, const std::string& token) {
  const WorldBounds world = world_bounds(settings, layout);
  const bool site = settings.mode == Mode::site;
  const std::string endpoint = site ? site_server : master_addr + ":" + std::to_string(ports.rdzvd);
  // Where clients may look for rdzvd: the step's range (they walk its probe sequence), or just
  // the site server's port.
  const std::string rdzvd_ports = site ? site_server.substr(site_server.rfind(':') + 1) : describe(settings.ports);
  return {
      {"MASTER_ADDR", master_addr},
      {"MASTER_PORT", std::to_string(ports.master)},
      {"RDZV_ID", rendezvous_id(settings, layout.job_id, layout.step_id, layout.restarts)},
      {"RDZV_ENDPOINT", endpoint},
      {"RDZV_TOKEN", token},
      {"WORLD_SIZE", std::to_string(layout.ntasks)},
      {"LOCAL_WORLD_SIZE", std::to_string(layout.local_tasks)},
      {"NODE_RANK", std::to_string(layout.node_id)},
      {"GROUP_RANK", std::to_string(layout.node_id)},
      {"NNODES", std::to_string(layout.nnodes)},
      {"LLM_RDZV_PORT_RANGE", rdzvd_ports},
      {"LLM_RDZV_PORT_PROBES", std::to_string(site ? 1 : settings.port_probes)},
      {"LLM_RDZV_MIN_WORLD", std::to_string(world.min)},
      {"LLM_RDZV_MAX_WORLD", std::to_string(world.max)},
      {"LLM_RDZV_TIMEOUT", std::to_string(settings.timeout_s)},
  };
}

EnvList task_env(std::uint32_t rank, std::uint32_t local_rank) {
  return {{"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(local_rank)}};
}

void check_node_bounds(const StepSettings& settings, const StepLayout& layout) {
  if (!settings.nodes || is_script_step(layout.step_id)) return;
  const std::string asked = "nodes=" + std::to_string(settings.nodes->min) + ":" + std::to_string(settings.nodes->max);
  const bool fixed = settings.nodes->min == layout.nnodes && settings.nodes->max == layout.nnodes;
  if (!evenly_spread(layout) && !fixed) {
    throw ArgError(asked + ": the step's " + std::to_string(layout.ntasks) + " tasks are not spread evenly over its " +
                   std::to_string(layout.nnodes) + " nodes, and an elastic world counts whole nodes of " +
                   "equal size; give every node the same number of tasks (srun --ntasks-per-node)");
  }
  if (layout.nnodes >= settings.nodes->min && layout.nnodes <= settings.nodes->max) return;
  const std::string has = "the step runs on " + std::to_string(layout.nnodes) + " node" + (layout.nnodes == 1 ? "" : "s");
  throw ArgError(asked + ": " + has + (layout.nnodes < settings.nodes->min
                                           ? ", fewer than MIN, so its rendezvous could never form; run it on at least " +
                                                 std::to_string(settings.nodes->min) + " nodes (srun -N) or lower MIN"
                                           : ", more than MAX; run it on at most " + std::to_string(settings.nodes->max) +
                                                 " nodes (srun -N) or raise MAX"));
}

std::vector<std::string> contract_variables() {
  std::vector<std::string> names;
  for (const auto& [name, value] : step_env(StepSettings{}, StepLayout{}, StepPorts{}, "", ":0", "")) names.push_back(name);
  for (const auto& [name, value] : task_env(0, 0)) names.push_back(name);
  return names;
}

}  // namespace llmrdzv::spank
