// rdzvd's entry point: options, --exit-with-parent, and the exit status contract
// (0 stopped cleanly, 2 bad flags/config/input, 1 anything else). A daemon that cannot start
// says why on --port-fd too ("error: ..."), where its launcher waits for the port: slurmstepd
// then prints the reason, not just an exit status.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "daemon.hpp"
#include "tuning.hpp"

int main(int argc, char** argv) {
  using namespace llmrdzv::server;
  const pid_t parent = getppid();
  tune_process();
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    DaemonOptions options = parse_options(args);
    if (options.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    check_startup_only(options);
    if (options.exit_with_parent) {
      // SIGTERM takes the graceful path. A parent that died before prctl left us re-parented, so
      // the parent pid differs from the one main() began with. Pid 1 may well be the real parent
      // (trainer --nproc as a container's entrypoint). A parent gone before main() began goes
      // unseen here; a launcher's --port-fd pipe then has no reader, and writing the port fails.
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) {
        std::fprintf(stderr, "rdzvd: --exit-with-parent: the parent process is already gone, exiting\n");
        return 0;
      }
    }
    return run_daemon(std::move(options), args);
  } catch (const OptionsError& e) {
    std::fprintf(stderr, "rdzvd: error: %s\n", e.what());
    report_failure(args, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rdzvd: fatal: %s\n", e.what());
    report_failure(args, e.what());
    return 1;
  }
}
