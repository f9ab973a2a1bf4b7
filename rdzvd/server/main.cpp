// rdzvd's entry point: options, --exit-with-parent, and the exit status contract
// (0 stopped cleanly, 2 bad flags/config/input, 1 anything else).
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
      // SIGTERM takes the graceful path. A parent that died before prctl leaves us re-parented.
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent || parent == 1) {
        std::fprintf(stderr, "rdzvd: --exit-with-parent: the parent process is already gone, exiting\n");
        return 0;
      }
    }
    return run_daemon(std::move(options), args);
  } catch (const OptionsError& e) {
    std::fprintf(stderr, "rdzvd: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rdzvd: fatal: %s\n", e.what());
    return 1;
  }
}
