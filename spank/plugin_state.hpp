// What the plugin's SPANK contexts share inside one process (srun, sbatch/salloc or slurmstepd):
// the site's settings, the user's option, and in slurmstepd the step's env and its rdzvd; plus
// the one way every entry point turns a failure into "llm-rdzv: ..." and -1.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "rdzvd_launch.hpp"
#include "site_config.hpp"
#include "step_env.hpp"
#include "user_options.hpp"

namespace llmrdzv::spank {

struct PluginState {
  SiteConfig site;
  bool option_given = false;
  UserOptions user;
  bool active = false;  // this step gets the env contract
  EnvList env;          // the step's part of it (remote context)
  RunningDaemon daemon;
  std::uint32_t local_tasks = 0;   // of this step on this node
  std::uint32_t tasks_exited = 0;  // of those
  std::string task_error;          // why this node's tasks must not run (slurmstepd-side failure)
  std::string rank0_warning;       // what rank 0 is told on its stderr before it starts
};

PluginState& state();

// How srun hands the step's token and its randomly chosen ports to slurmstepd: srun's
// environment goes to the step, and SLURM_* variables go even with --export=NONE. Tasks see them
// as RDZV_TOKEN, RDZV_ENDPOINT and MASTER_PORT only.
inline constexpr const char* kTokenCarrier = "SLURM_LLM_RDZV_TOKEN";
inline constexpr const char* kPortsCarrier = "SLURM_LLM_RDZV_PORTS";

// slurm_error("llm-rdzv: <message>"), and -1.
int report(const std::string& message);

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

// The kernel's ephemeral port range, which the step's ports must avoid.
PortRange kernel_ephemeral_ports();

}  // namespace llmrdzv::spank
