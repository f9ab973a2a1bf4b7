// Starting and stopping the per-step rdzvd on a step's first node. slurmstepd calls this as root;
// the daemon runs as the job's user, gets the token through its environment (never argv), and
// counts as started only once it has written the port it bound to its port file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "step_env.hpp"
#include "step_settings.hpp"

namespace llmrdzv::spank {

struct JobUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

struct LaunchSpec {
  std::string program;
  std::vector<std::string> args;  // argv[1..]
  std::string token;              // LLM_RDZV_TOKEN in the daemon's environment
  JobUser user;
  // Empty: /dev/null. Created by the daemon's user, never an existing file or a symlink.
  std::string log_path;
  std::chrono::milliseconds start_timeout{10000};
};

// The descriptor the daemon inherits to report its port on ("--port-fd 3"): one line, "PORT" or
// "HOST:PORT", then the daemon closes it. slurmstepd (root) reads it with a deadline and never
// opens a path the job's user controls.
inline constexpr int kPortFd = 3;

// rdzvd's command line for one step (the flags rdzvd documents), with the step's participant
// range (world_bounds), which rdzvd then holds every Join to.
std::vector<std::string> rdzvd_arguments(const SiteConfig& site, const StepSettings& settings,
                                         const StepLayout& layout, const std::string& rdzv_id,
                                         std::uint16_t base_port);

struct RunningDaemon {
  pid_t pid = -1;
  std::uint16_t port = 0;
};

// Forks and execs the daemon with the write end of a pipe as kPortFd, then waits (poll, up to
// spec.start_timeout) until it reports a port there. Throws std::runtime_error saying why it did
// not start (exec failure, early exit, timeout, a report that is no port); a daemon that did not
// start is killed and reaped before the throw.
RunningDaemon start_daemon(const LaunchSpec& spec);

// finish_daemon's `drain` that waits as long as members remain (they leave, or are seen failing
// after a heartbeat timeout): the daemon then lives as long as the step's ranks on every node.
inline constexpr std::chrono::milliseconds kDrainWhileMembersRemain = std::chrono::milliseconds::max();

// The end of the step on the daemon's node, whose own tasks are done while ranks on other nodes
// may still be running: SIGUSR1 asks the daemon to exit once no member remains; after `drain` it
// is stopped as stop_daemon does, with `grace`.
void finish_daemon(const RunningDaemon& daemon, std::chrono::milliseconds drain, std::chrono::milliseconds grace);

// SIGTERM, up to `grace` for it to exit, then SIGKILL. Only signals the process while it is
// still our unreaped child, so a recycled pid is never hit.
void stop_daemon(const RunningDaemon& daemon, std::chrono::milliseconds grace);

}  // namespace llmrdzv::spank
