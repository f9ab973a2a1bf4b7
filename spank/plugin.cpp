// The SPANK entry points of llm_rdzv.so. Each context does only its own job:
//   allocator (sbatch/salloc): check the option, so a bad #SBATCH --llm-rdzv fails at submit;
//   local (srun):              check the option, make the step's random token (step mode);
//   remote (slurmstepd):       compute the env contract, start rdzvd on the step's first node
//                              before any task, set the env in every task, and after the
//                              node's last task let rdzvd drain until no rank of any node remains.
// No exception leaves this file: every failure becomes "llm-rdzv: ..." and a -1 return; in
// slurmstepd the failure instead fails the node's tasks, printing the reason on their stderr.
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/common/token.hpp"
#include "master_addr.hpp"
#include "rdzvd_launch.hpp"
#include "site_secret.hpp"
#include "slurm_step.hpp"
#include "step_env.hpp"

// spank.h declares the entry points without C linkage guards. SPANK_PLUGIN's const arrays would
// get internal linkage in C++, so the loader's symbols are spelled out with `extern`.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
extern const char plugin_name[] = "llm_rdzv";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace llmrdzv::spank {
namespace {

struct PluginState {
  SiteConfig site;
  bool option_given = false;
  UserOptions user;
  bool active = false;  // this step gets the env contract
  EnvList env;          // the step's part of it (remote context)
  RunningDaemon daemon;
  std::uint32_t local_tasks = 0;   // of this step on this node
  std::uint32_t tasks_exited = 0;  // of those
  std::string task_error;  // why this node's tasks must not run (slurmstepd-side failure)
};

PluginState& state() {
  static PluginState instance;
  return instance;
}

// How srun hands the step's token and its randomly chosen ports to slurmstepd: srun's
// environment goes to the step, and SLURM_* variables go even with --export=NONE. Tasks see them
// as RDZV_TOKEN, RDZV_ENDPOINT and MASTER_PORT only.
constexpr const char* kTokenCarrier = "SLURM_LLM_RDZV_TOKEN";
constexpr const char* kPortsCarrier = "SLURM_LLM_RDZV_PORTS";

int report(const std::string& message) {
  slurm_error("llm-rdzv: %s", message.c_str());
  return -1;
}

// Runs `body`, turning any exception into the plugin's error message and -1.
template <typename Body>
int guarded(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return report(e.what());
  } catch (...) {
    return report("unexpected error");
  }
}

PortRange kernel_ephemeral_ports() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned lo = 32768, hi = 60999;
  in >> lo >> hi;
  return {std::uint16_t(lo), std::uint16_t(hi)};
}

// sbatch and salloc hand a bare --llm-rdzv to the job's steps as the text "(null)" (measured:
// SLURM_SPANK__SLURM_SPANK_OPTION_llm_rdzv_llm_rdzv=(null)); it means "no argument".
constexpr std::string_view kAllocatorNoArgument = "(null)";

int on_option(int, const char* optarg, int) {
  return guarded([&] {
    if (optarg != nullptr && optarg == kAllocatorNoArgument) optarg = nullptr;
    state().user = parse_user_options(optarg);
    state().option_given = true;
    return 0;
  });
}

char option_name[] = "llm-rdzv";
char option_arginfo[] = "ARGS";

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

// srun's random ports; the deterministic (job, step) ports only where no srun started the step.
StepPorts ports_of_step(spank_t sp, const StepSettings& settings, const StepLayout& layout) {
  const std::string carried = getenv_from_job(sp, kPortsCarrier);
  if (!carried.empty()) return parse_ports_text(carried, settings.ports);
  if (!is_script_step(layout.step_id)) {
    throw ArgError(std::string("the step has no ports from srun (") + kPortsCarrier +
                   " is missing): is the llm-rdzv plugin loaded where srun runs?");
  }
  return step_ports(settings, layout.job_id, layout.step_id);
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

int prepare_remote(spank_t sp) {
  PluginState& s = state();
  const StepLayout layout = read_layout(sp);
  if (is_extern_step(layout.step_id)) {
    s.active = false;
    return 0;
  }
  const StepSettings settings = resolve_step_settings(s.site, s.user, kernel_ephemeral_ports());
  check_node_bounds(settings, layout);
  const std::string rdzv_id = rendezvous_id(settings, layout.job_id, layout.step_id);
  const JobUser user = job_user(sp);
  const std::string token = step_token(sp, settings, layout, rdzv_id, user.uid);
  const std::string master = master_address(settings.addr, first_node(sp, layout));
  const StepPorts ports = ports_of_step(sp, settings, layout);
  s.env = step_env(settings, layout, ports, master, s.site.server.value_or(""), token);
  if (settings.mode == Mode::step && layout.node_id == 0) {
    start_step_daemon(settings, layout, ports, rdzv_id, token, user);
  }
  return 0;
}

int prepare_local() {
  const StepSettings settings = resolve_step_settings(state().site, state().user, kernel_ephemeral_ports());
  // spank_setenv only works remotely.
  if (settings.mode == Mode::step && setenv(kTokenCarrier, make_random_token().c_str(), 1) != 0) {
    throw ArgError("cannot pass the step's token to the tasks");
  }
  // Unpredictable ports: another user cannot bind the step's rdzvd or MASTER_PORT in advance.
  const std::uint64_t random = std::stoull(make_random_token().substr(0, 16), nullptr, 16);
  if (setenv(kPortsCarrier, ports_text(random_step_ports(settings.ports, random)).c_str(), 1) != 0) {
    throw ArgError("cannot pass the step's ports to the nodes");
  }
  return 0;
}

}  // namespace
}  // namespace llmrdzv::spank

using namespace llmrdzv::spank;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_REMOTE && context != S_CTX_ALLOCATOR) return 0;
  return guarded([&] {
    try {
      state().site = parse_site_config(std::vector<std::string>(av, av + ac), LLMRDZV_DEFAULT_RDZVD,
                                       kernel_ephemeral_ports());
    } catch (const ArgError& e) {
      throw ArgError(std::string("plugstack.conf: ") + e.what());
    }
    static std::string usage = kUserOptionUsage;
    static spank_option option = {option_name, option_arginfo, usage.data(), 2, 0, on_option};
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) throw ArgError("cannot register --llm-rdzv");
    return 0;
  });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  PluginState& s = state();
  s.active = (s.option_given || s.site.default_on) && s.user.enabled;
  if (!s.active) return 0;
  return guarded([&] {
    switch (spank_context()) {
      case S_CTX_ALLOCATOR:
        resolve_step_settings(s.site, s.user, kernel_ephemeral_ports());
        return 0;
      case S_CTX_LOCAL:
        return prepare_local();
      case S_CTX_REMOTE:
        // Failing init here would only fail this node's launch, and srun may still exit 0
        // (measured); failing every local task instead makes the step fail visibly, with the
        // reason on the tasks' stderr.
        try {
          return prepare_remote(sp);
        } catch (const std::exception& e) {
          s.task_error = e.what();
          slurm_error("llm-rdzv: %s", e.what());
          return 0;
        }
      default:
        return 0;
    }
  });
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
  const PluginState& s = state();
  if (s.option_given && !s.user.enabled) {
    // --llm-rdzv=off inside a job that has the option: the tasks inherit the batch step's env
    // contract (its rank, world and token), which must not reach a step that asked for none.
    char marker[8];
    if (spank_getenv(sp, "LLM_RDZV_MIN_WORLD", marker, sizeof marker) != ESPANK_ENV_NOEXIST) {
      for (const std::string& name : contract_variables()) spank_unsetenv(sp, name.c_str());
    }
    spank_unsetenv(sp, kTokenCarrier);
    spank_unsetenv(sp, kPortsCarrier);
    return 0;
  }
  if (!s.active) return 0;
  if (!s.task_error.empty()) {
    const std::string line = "llm-rdzv: " + s.task_error + "\n";
    const ssize_t written = write(STDERR_FILENO, line.data(), line.size());
    (void)written;  // the task fails either way
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
    return 0;
  });
}

// The daemon's node is done once its last task exits; ranks on other nodes may still be running.
// The drain happens here, not in slurm_spank_exit: slurmstepd kills every process of the step's
// container (proctrack's SIGKILL, rdzvd included) after the tasks are reaped and before
// slurm_spank_exit, but only once this callback has returned for the last task.
extern "C" int slurm_spank_task_exit(spank_t, int, char**) {
  PluginState& s = state();
  if (spank_context() != S_CTX_REMOTE || s.daemon.pid <= 0 || ++s.tasks_exited < s.local_tasks) return 0;
  return guarded([&] {
    finish_daemon(s.daemon, kDrainWhileMembersRemain, std::chrono::milliseconds(3000));
    s.daemon = {};
    return 0;
  });
}

extern "C" int slurm_spank_exit(spank_t, int, char**) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return guarded([] {
    // Only when the daemon outlived its tasks' exits (a task that never started): ranks on other
    // nodes get up to a heartbeat timeout (+2 s) to leave, or to be seen failing.
    const std::uint32_t heartbeat_ms = state().site.heartbeat_timeout_ms ? state().site.heartbeat_timeout_ms : 10000;
    finish_daemon(state().daemon, std::chrono::milliseconds(heartbeat_ms + 2000), std::chrono::milliseconds(3000));
    state().daemon = {};
    return 0;
  });
}
