// The per-step rdzvd on a step's first node: its command line, and the shared launcher that
// slurmstepd (as root) starts it with as the job's user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llmrdzv/launch/daemon_launch.hpp"
#include "step_env.hpp"
#include "step_settings.hpp"

namespace llmrdzv::spank {

using launch::finish_daemon;
using launch::JobUser;
using launch::kDrainWhileMembersRemain;
using launch::LaunchSpec;
using launch::RunningDaemon;
using launch::start_daemon;
using launch::stop_daemon;

// rdzvd's command line for one step (the flags rdzvd documents), with the step's participant
// range (world_bounds), which rdzvd then holds every Join to. start_daemon adds --port-fd.
std::vector<std::string> rdzvd_arguments(const SiteConfig& site, const StepSettings& settings,
                                         const StepLayout& layout, const std::string& rdzv_id,
                                         std::uint16_t base_port);

}  // namespace llmrdzv::spank
