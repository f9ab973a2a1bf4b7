// slurmstepd (see contexts.hpp): the step's env contract, the per-step rdzvd on its first node
// (started before any task, drained after the node's last task), and each task's variables.
#include <unistd.h>

#include <chrono>
#include <string>

#include "contexts.hpp"
#include "llmrdzv/common/token.hpp"
#include "master_addr.hpp"
#include "plugin_state.hpp"
#include "port_check.hpp"
#include "rdzvd_launch.hpp"
#include "site_secret.hpp"
#include "slurm_step.hpp"
#include "step_env.hpp"
#include "step_settings.hpp"

extern "C" {
#include <slurm/slurm.h>
}

namespace llmrdzv::spank {
namespace {

std::string step_token(spank_t sp, const StepSettings& settings, const StepLayout& layout,
                       const std::string& rdzv_id, uid_t uid) {
  if (settings.mode == Mode::site) {
    return site_token(read_site_secret(*state().site.secret_file), uid, rdzv_id);
  }
  if (is_script_step(layout.step_id)) return make_random_token();
  std::string token = getenv_from_job(sp, kTokenCarrier);
  if (token.empty()) throw ArgError(std::string("the step has no token from srun (") + kTokenCarrier + " is missing)");
  return token;
}

// srun's random ports; drawn here where no srun started the step (the batch script, salloc's
// interactive step: one node, so nobody else needs to be told). The script step's environment
// may hold an earlier step's carrier (an sbatch from inside a job step): it never counts there.
// There the draw is repeated while MASTER_PORT is taken (master_port_warning says by whom if it
// stays so).
StepPorts ports_of_step(spank_t sp, const StepSettings& settings, const StepLayout& layout) {
  if (is_script_step(layout.step_id)) {
    constexpr int kDraws = 16;
    StepPorts ports = draw_step_ports(settings.ports, settings.port_probes);
    for (int draw = 1; draw < kDraws && port_taken(ports.master); ++draw) {
      ports = draw_step_ports(settings.ports, settings.port_probes);
    }
    return ports;
  }
  const std::string carried = getenv_from_job(sp, kPortsCarrier);
  if (carried.empty()) {
    throw ArgError(std::string("the step has no ports from srun (") + kPortsCarrier +
                   " is missing): is the llm-rdzv plugin loaded where srun runs?");
  }
  return parse_ports_text(carried, settings.ports);
}

// On the first node, where rank 0's c10d TCPStore will listen, before any task starts: whether
// somebody else holds MASTER_PORT, and if so the warning rank 0 gets, naming the holder. Not a
// failure: rdzvd's clients (the trainer) never use the port, and another step's rdzvd or store
// on a busy node may hold it; a c10d program's rank 0 then fails with EADDRINUSE, and srun -K
// ends its other ranks instead of leaving them on the holder until their timeout (docs/security.md).
std::string master_port_warning(const StepPorts& ports, const StepSettings& settings, const std::string& node) {
  const auto holder = port_taken(ports.master);
  if (!holder) return {};
  return "MASTER_PORT " + std::to_string(ports.master) + " on " + node + " is taken by " + *holder +
         " before the step's tasks started: a program that opens c10d's store there (init_process_group with "
         "env://) fails with EADDRINUSE, rdzvd's clients such as the trainer do not use it; another program may "
         "hold ports of the range " + std::to_string(settings.ports.lo) + "-" + std::to_string(settings.ports.hi) +
         ": rerun the step (its ports are drawn anew), run c10d programs with srun -K, or give "
         "--llm-rdzv=port=LO-HI a range of your own";
}

// A line on the task's stderr (init_task runs in the task's process, before its program).
void tell_task(const std::string& text) {
  const std::string line = text + "\n";
  const ssize_t written = write(STDERR_FILENO, line.data(), line.size());
  (void)written;  // nothing better to do if stderr is gone
}

// rdzvd reports its port over an inherited pipe (rdzvd_launch.hpp): root opens no file and no
// directory the job's user controls.
void start_step_daemon(const StepSettings& settings, const StepLayout& layout, const StepPorts& ports,
                       const std::string& rdzv_id, const std::string& token, const JobUser& user) {
  PluginState& s = state();
  LaunchSpec spec;
  spec.program = s.site.rdzvd_path;
  spec.token = token;
  spec.user = user;
  spec.start_timeout = std::chrono::milliseconds(s.site.start_timeout_ms);
  if (!s.site.log_dir.empty()) {
    // Unique per slurmstepd (a requeued job reuses its job id), and with a random part so that
    // nobody can plant the name ahead of the step: the daemon creates it new.
    spec.log_path = s.site.log_dir + "/rdzvd-" + rendezvous_id({}, layout.job_id, layout.step_id) + "-" +
                    std::to_string(getpid()) + "-" + make_random_token().substr(0, 8) + ".log";
  }
  spec.args = rdzvd_arguments(s.site, settings, layout, rdzv_id, ports.rdzvd);
  s.daemon = start_daemon(spec);
  s.local_tasks = layout.local_tasks;
  slurm_debug("llm-rdzv: rdzvd pid %d serves %s on port %u", int(s.daemon.pid), rdzv_id.c_str(), unsigned(s.daemon.port));
}

}  // namespace

void prepare_remote(spank_t sp) {
  PluginState& s = state();
  const StepLayout layout = read_layout(sp);
  if (is_extern_step(layout.step_id)) {
    s.active = false;
    return;
  }
  const StepSettings settings = resolve_step_settings(s.site, s.user, kernel_ephemeral_ports());
  check_node_bounds(settings, layout);
  const std::string rdzv_id = rendezvous_id(settings, layout.job_id, layout.step_id, layout.restarts);
  const JobUser user = job_user(sp);
  const std::string token = step_token(sp, settings, layout, rdzv_id, user.uid);
  const std::string first = first_node(sp, layout);
  const std::string master = master_address(settings.addr, first);
  const StepPorts ports = ports_of_step(sp, settings, layout);
  s.env = step_env(settings, layout, ports, master, s.site.server.value_or(""), token);
  if (layout.node_id != 0) return;
  if (settings.mode == Mode::step) start_step_daemon(settings, layout, ports, rdzv_id, token, user);
  // In a range no wider than the probe window the step's own rdzvd walks onto MASTER_PORT once
  // every other port is taken (step_env.hpp): that holder is no other user's.
  if (s.daemon.pid > 0 && s.daemon.port == ports.master) return;
  s.rank0_warning = master_port_warning(ports, settings, first);
}

int init_task(spank_t sp) {
  const PluginState& s = state();
  if (!s.active) {
    // A step without the option (or with =off) started from inside one that had it (a batch
    // script, `srun --llm-rdzv --pty bash`): its tasks would inherit that step's env contract
    // (its rank, world and token), which must not reach a step that asked for none.
    char marker[8];
    if (spank_getenv(sp, "LLM_RDZV_MIN_WORLD", marker, sizeof marker) != ESPANK_ENV_NOEXIST) {
      for (const std::string& name : contract_variables()) spank_unsetenv(sp, name.c_str());
    }
    spank_unsetenv(sp, kTokenCarrier);
    spank_unsetenv(sp, kPortsCarrier);
    return 0;
  }
  if (!s.task_error.empty()) {
    tell_task("llm-rdzv: " + s.task_error);
    return -1;
  }
  return guarded([&] {
    const auto rank = item<uint32_t>(sp, S_TASK_GLOBAL_ID, "the task's global id");
    const auto local_rank = item<int>(sp, S_TASK_ID, "the task's local id");
    EnvList env = s.env;
    for (auto& kv : task_env(rank, uint32_t(local_rank))) env.push_back(std::move(kv));
    for (const auto& [name, value] : env) {
      if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
        throw ArgError("cannot set " + name + " in the task");
      }
    }
    spank_unsetenv(sp, kTokenCarrier);
    spank_unsetenv(sp, kPortsCarrier);
    if (rank == 0 && !s.rank0_warning.empty()) tell_task("llm-rdzv: warning: " + s.rank0_warning);
    return 0;
  });
}

// The daemon's node is done once its last task exits; ranks on other nodes may still be running.
// The drain happens here, not at the step's end: slurmstepd kills every process of the step's
// container (proctrack's SIGKILL, rdzvd included) after the tasks are reaped and before
// slurm_spank_exit, but only once slurm_spank_task_exit has returned for the last task.
void task_exited() {
  PluginState& s = state();
  if (s.daemon.pid <= 0 || ++s.tasks_exited < s.local_tasks) return;
  finish_daemon(s.daemon, kDrainWhileMembersRemain, std::chrono::milliseconds(3000));
  s.daemon = {};
}

void finish_remote() {
  // Only when the daemon outlived its tasks' exits (a task that never started): ranks on other
  // nodes get up to a heartbeat timeout (+2 s) to leave, or to be seen failing.
  const std::uint32_t heartbeat_ms = state().site.heartbeat_timeout_ms ? state().site.heartbeat_timeout_ms : 10000;
  finish_daemon(state().daemon, std::chrono::milliseconds(heartbeat_ms + 2000), std::chrono::milliseconds(3000));
  state().daemon = {};
}

}  // namespace llmrdzv::spank
