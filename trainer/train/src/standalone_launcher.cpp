// The --nproc launcher: private rdzvd, N ranks, failure propagation (see standalone_launcher.hpp).
#include "standalone_launcher.hpp"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "llmrdzv/common/token.hpp"
#include "llmrdzv/launch/daemon_launch.hpp"

namespace llmrdzv::train {
namespace fs = std::filesystem;
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int signal) { g_stop_signal = signal; }

fs::path self_executable() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("--nproc: cannot find this program's path: " + ec.message());
  return self;
}

// rdzvd next to the trainer (build tree), in ../sbin (installed), or on PATH; LLM_RDZV_RDZVD wins.
fs::path find_rdzvd() {
  if (const char* explicit_path = std::getenv("LLM_RDZV_RDZVD"); explicit_path && *explicit_path) {
    if (::access(explicit_path, X_OK) == 0) return explicit_path;
    throw std::runtime_error(std::string("--nproc: LLM_RDZV_RDZVD=") + explicit_path + " is not an executable");
  }
  const fs::path dir = self_executable().parent_path();
  std::vector<fs::path> candidates = {dir / "rdzvd", dir.parent_path() / "sbin" / "rdzvd"};
  if (const char* path = std::getenv("PATH")) {
    std::string entries = path;
    for (std::size_t begin = 0; begin <= entries.size();) {
      const std::size_t end = std::min(entries.find(':', begin), entries.size());
      if (end > begin) candidates.push_back(fs::path(entries.substr(begin, end - begin)) / "rdzvd");
      begin = end + 1;
    }
  }
  candidates.push_back("/usr/sbin/rdzvd");
  for (const fs::path& candidate : candidates) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error("a run of its own ranks (--nproc, or --offload optimizer in one process) needs rdzvd: "
                           "not found next to " + self_executable().string() +
                           ", in ../sbin, on PATH or in /usr/sbin (set LLM_RDZV_RDZVD=/path/to/rdzvd)");
}

// fork + exec with extra environment; the child dies with the launcher.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("--nproc: fork failed: ") + std::strerror(errno));
  if (pid > 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::_exit(127);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGINT, &default_action, nullptr);
  ::sigaction(SIGTERM, &default_action, nullptr);
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> raw;
  for (const std::string& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  ::execv(raw[0], raw.data());
  std::fprintf(stderr, "trainer: error: cannot run %s: %s\n", raw[0], std::strerror(errno));
  ::_exit(127);
}

// One line to stderr in one write, so it does not interleave with the ranks' and rdzvd's output.
void say(const std::string& line) {
  const std::string text = line + '\n';
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string describe_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(wait_status));
  return "exited with status " + std::to_string(exit_status_of(wait_status));
}

// Starts rdzvd on loopback until this process exits, and returns once it listens; its warnings
// go to our stderr.
launch::RunningDaemon start_rdzvd(const std::string& rdzv_id, const std::string& token) {
  launch::LaunchSpec spec;
  spec.program = find_rdzvd().string();
  spec.args = {"--listen", "127.0.0.1:0", "--mode", "step", "--rdzv-id", rdzv_id, "--exit-with-parent",
               "--log-level", "warn"};
  spec.token = token;
  spec.pass_environment = {"LD_LIBRARY_PATH"};  // the libraries the trainer found, rdzvd finds too
  spec.keep_stderr = true;
  spec.start_timeout = std::chrono::seconds(20);
  try {
    return launch::start_daemon(spec);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--nproc: the local ") + e.what());
  }
}

}  // namespace

bool rendezvous_in_environment() {
  const char* endpoint = std::getenv("RDZV_ENDPOINT");
  return endpoint != nullptr && *endpoint != '\0';
}

int run_standalone(const std::vector<std::string>& args, int nproc) {
  if (rendezvous_in_environment()) {
    throw std::runtime_error(
        "--nproc starts a rendezvous of its own, but RDZV_ENDPOINT is already set (srun --llm-rdzv gives every "
        "task its rank): drop --nproc");
  }
  const std::string rdzv_id = "standalone-" + std::to_string(::getpid());
  const std::string token = make_random_token();

  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);

  const launch::RunningDaemon daemon = start_rdzvd(rdzv_id, token);
  const pid_t rdzvd = daemon.pid;
  const std::string port = std::to_string(daemon.port);
  say("trainer: standalone: " + std::to_string(nproc) + (nproc == 1 ? " rank" : " ranks") +
      " on this machine, rdzvd on 127.0.0.1:" + port);

  std::vector<std::string> argv = {self_executable().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--nproc", "0"});
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::pair<std::string, std::string>> env = {
        {"RDZV_ENDPOINT", "127.0.0.1:" + port}, {"RDZV_ID", rdzv_id}, {"RDZV_TOKEN", token},
        {"WORLD_SIZE", std::to_string(nproc)},  {"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", std::to_string(nproc)}, {"NODE_RANK", "0"}, {"GROUP_RANK", "0"}, {"NNODES", "1"},
        {"MASTER_ADDR", "127.0.0.1"}};
    ranks.push_back(spawn(argv, env));
  }

  int result = 0;
  bool rdzvd_running = true;
  std::size_t running = ranks.size();
  bool stopping = false;
  const auto stop_all = [&](int signal) {
    stopping = true;
    for (const pid_t pid : ranks) {
      if (pid > 0) ::kill(pid, signal);
    }
  };
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) {
        if (g_stop_signal && !stopping) {
          say(std::string("trainer: standalone: ") + ::strsignal(g_stop_signal) + ": stopping the ranks");
          stop_all(SIGTERM);
          result = 128 + g_stop_signal;
        }
        continue;
      }
      break;
    }
    if (pid == rdzvd) {
      rdzvd_running = false;
      if (!stopping) {
        say("trainer: error: standalone: the local rdzvd " + describe_status(status) + "; stopping the ranks");
        stop_all(SIGTERM);
        result = 1;
      }
      continue;
    }
    const auto it = std::find(ranks.begin(), ranks.end(), pid);
    if (it == ranks.end()) continue;
    *it = -1;
    --running;
    if (status != 0 && result == 0) {
      result = exit_status_of(status);
      std::string message = "trainer: error: standalone: rank " + std::to_string(it - ranks.begin()) + ' ' +
                            describe_status(status);
      if (running > 0) message += "; stopping the other " + std::to_string(running) + (running == 1 ? " rank" : " ranks");
      say(message);
      stop_all(SIGTERM);
    }
  }
  if (rdzvd_running) launch::stop_daemon(daemon, std::chrono::seconds(5));
  return result;
}

}  // namespace llmrdzv::train
