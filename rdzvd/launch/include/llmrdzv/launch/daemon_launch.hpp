// Starting and stopping an rdzvd process, the one way every part of the project does it: the
// SPANK plugin (as root, for the job's user), `trainer --nproc`, rdzv-bench. The daemon gets the
// token through its environment (never argv) and counts as started only once it reports the
// port it bound over an inherited pipe (`--port-fd`), read with a deadline: no port file, so
// the starter never opens a path another user could plant.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmrdzv::launch {

struct JobUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

struct LaunchSpec {
  std::string program;
  std::vector<std::string> args;  // argv[1..]; start_daemon adds --port-fd
  std::string token;              // LLM_RDZV_TOKEN in the daemon's environment
  // The daemon's environment is LLM_RDZV_TOKEN, PATH=/usr/local/bin:/usr/bin:/bin and these
  // variables of the starter's own environment where set. `trainer --nproc` passes
  // LD_LIBRARY_PATH: an rdzvd built against libraries outside the system's path (a module
  // system, a private prefix) finds them as the trainer did. The SPANK plugin passes none
  // (slurmstepd's environment is not the job's).
  std::vector<std::string> pass_environment;
  // Who the daemon runs as; none: the caller's identity (only root can switch).
  std::optional<JobUser> user;
  // Where stdout and stderr go. Empty: /dev/null. Created by the daemon's user, never an existing
  // file or a symlink.
  std::string log_path;
  // With no log_path: stderr stays the starter's (its warnings reach the user's terminal).
  bool keep_stderr = false;
  std::chrono::milliseconds start_timeout{10000};
};

// The descriptor the daemon inherits to report its port on ("--port-fd 3"): one line, "PORT" or
// "HOST:PORT", then the daemon closes it.
inline constexpr int kPortFd = 3;

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
// after a heartbeat timeout).
inline constexpr std::chrono::milliseconds kDrainWhileMembersRemain = std::chrono::milliseconds::max();

// When the starter's own ranks are done while others may still be running: SIGUSR1 asks the
// daemon to exit once no member remains; after `drain` it is stopped as stop_daemon does, with
// `grace`.
void finish_daemon(const RunningDaemon& daemon, std::chrono::milliseconds drain, std::chrono::milliseconds grace);

// SIGTERM, up to `grace` for it to exit, then SIGKILL. Only signals the process while it is
// still our unreaped child, so a recycled pid is never hit.
void stop_daemon(const RunningDaemon& daemon, std::chrono::milliseconds grace);

}  // namespace llmrdzv::launch
