// fork/exec/wait of rdzvd (see daemon_launch.hpp). Between fork and exec the child of a
// multi-threaded parent (slurmstepd, the trainer) only makes async-signal-safe calls on memory
// prepared beforehand.
#include "llmrdzv/launch/daemon_launch.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::launch {
namespace {

using Clock = std::chrono::steady_clock;

// Exit codes the child uses before exec, so the parent can say which step failed.
constexpr int kExitDropPrivileges = 120;
constexpr int kExitLog = 121;
constexpr int kExitExec = 127;

std::string describe_exit(int status, const LaunchSpec& spec) {
  const std::string uid = std::to_string(spec.user ? spec.user->uid : getuid());
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  switch (code) {
    case kExitDropPrivileges:
      return "could not switch to uid " + uid;
    case kExitLog:
      return "could not create its log file " + spec.log_path + " as uid " + uid;
    case kExitExec:
      return "could not be executed (" + spec.program + ": missing or not executable for uid " + uid + ")";
    default:
      return "exited with status " + std::to_string(code) +
             (spec.log_path.empty() ? std::string() : " (see " + spec.log_path + ")");
  }
}

// Why the daemon's log file could not be created, and what fixes it, from the errno the child
// reported before it exited.
std::string describe_log_error(int error, const LaunchSpec& spec) {
  const std::string uid = std::to_string(spec.user ? spec.user->uid : getuid());
  const std::string dir = spec.log_path.substr(0, spec.log_path.rfind('/'));
  const std::string head = "could not create its log file " + spec.log_path + " as uid " + uid + ": " + std::strerror(error);
  switch (error) {
    case ENOENT:
      return head + " (the log directory " + dir + " does not exist: create it on every node, e.g. "
             "install -d -m 1777 " + dir + ", or change log_dir in plugstack.conf)";
    case EACCES:
    case EPERM:
    case EROFS:
      return head + " (jobs' users may not create files in " + dir + ": make it writable for them and sticky, "
             "e.g. chmod 1777 " + dir + ", owned by root, or change log_dir in plugstack.conf)";
    case EEXIST:
    case ELOOP:
      return head + " (something already has that name, a file or a symbolic link planted in " + dir +
             "; the daemon only ever creates a new file)";
    default:
      return head;
  }
}

// The reason in a report of "error: <why>" (the daemon's own) or "log-errno N" (the child's,
// before exec), first line only.
std::string reported_failure(const std::string& text, const LaunchSpec& spec) {
  const std::string line = text.substr(0, text.find('\n'));
  if (line.starts_with("error: ")) return "could not start: " + line.substr(7);
  return describe_log_error(int(parse_unsigned(line.substr(10), 1, 4095).value_or(EIO)), spec);
}

// The port in a report ("PORT" or "HOST:PORT", newline optional), or 0 when it names none.
std::uint16_t parse_port_report(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) text = text.substr(colon + 1);
  return std::uint16_t(parse_unsigned(text, 1, 65535).value_or(0));
}

[[noreturn]] void exec_child(const LaunchSpec& spec, char* const* argv, char* const* envp,
                             const char* log_path, int port_pipe) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2}) signal(sig, SIG_DFL);
  if (spec.user && (setgroups(spec.user->groups.size(), spec.user->groups.data()) != 0 ||
                    setgid(spec.user->gid) != 0 || setuid(spec.user->uid) != 0)) {
    _exit(kExitDropPrivileges);
  }
  // The port pipe becomes kPortFd, inherited across exec (dup2 clears close-on-exec).
  if (port_pipe == kPortFd ? fcntl(kPortFd, F_SETFD, 0) != 0 : dup2(port_pipe, kPortFd) != kPortFd) _exit(kExitExec);
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  // As the job's user, a new file only: a name planted in a shared log directory (a symlink to
  // the user's ~/.bashrc, an existing file) is refused, never followed or appended to.
  const int log_fd = log_path[0] == '\0'
                         ? null_fd
                         : open(log_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
  if (null_fd < 0 || log_fd < 0) {
    // The errno as "log-errno N\n", built without allocating (between fork and exec).
    char report[32] = "log-errno ";
    std::size_t at = 10;
    char digits[12];
    std::size_t count = 0;
    for (unsigned value = unsigned(errno); count == 0 || value > 0; value /= 10) digits[count++] = char('0' + value % 10);
    while (count > 0) report[at++] = digits[--count];
    report[at++] = '\n';
    (void)!write(kPortFd, report, at);
    _exit(kExitLog);
  }
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  if (!(spec.keep_stderr && log_path[0] == '\0')) dup2(log_fd, STDERR_FILENO);
  close_range(kPortFd + 1, ~0U, 0);
  if (chdir("/") != 0) _exit(kExitExec);
  execve(spec.program.c_str(), argv, envp);
  _exit(kExitExec);
}

}  // namespace

RunningDaemon start_daemon(const LaunchSpec& spec) {
  std::vector<std::string> argv_text = {spec.program};
  argv_text.insert(argv_text.end(), spec.args.begin(), spec.args.end());
  argv_text.insert(argv_text.end(), {"--port-fd", std::to_string(kPortFd)});
  std::vector<char*> argv;
  for (auto& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = {"LLM_RDZV_TOKEN=" + spec.token, "PATH=/usr/local/bin:/usr/bin:/bin"};
  for (const std::string& name : spec.pass_environment) {
    if (const char* value = std::getenv(name.c_str())) env_text.push_back(name + "=" + value);
  }
  std::vector<char*> envp;
  for (auto& entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("rdzvd: pipe failed: ") + std::strerror(errno));

  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw std::runtime_error(std::string("rdzvd: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), spec.log_path.c_str(), pipe_fds[1]);
  close(pipe_fds[1]);
  const int report = pipe_fds[0];
  const auto fail = [&](const std::string& why, bool kill_it) -> RunningDaemon {
    close(report);
    if (kill_it) stop_daemon({pid, 0}, std::chrono::milliseconds(0));
    throw std::runtime_error("rdzvd " + why + (kill_it && !spec.log_path.empty() ? " (see " + spec.log_path + ")" : ""));
  };

  // At most one short line, read as it comes (a daemon may write it in pieces), each wait bounded
  // by what is left of the start deadline: a daemon that never writes cannot hold root here.
  constexpr std::size_t kMaxReport = 64;
  constexpr std::size_t kMaxErrorReport = 4096;  // "error: <why>", a daemon that could not start
  const auto deadline = Clock::now() + spec.start_timeout;
  std::string text;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      return fail("did not report a listening port within " + std::to_string(spec.start_timeout.count()) + " ms", true);
    }
    pollfd ready{report, POLLIN, 0};
    const int polled = poll(&ready, 1, static_cast<int>(std::min<long long>(left, 50)));
    if (polled < 0 && errno != EINTR) return fail(std::string("port report: poll failed: ") + std::strerror(errno), true);
    char chunk[kMaxReport];
    const ssize_t got = polled > 0 ? read(report, chunk, sizeof chunk) : -1;
    if (got > 0) text.append(chunk, static_cast<std::size_t>(got));
    const bool error_report = text.starts_with("error: ") || text.starts_with("log-errno ");
    if (text.size() > (error_report ? kMaxErrorReport : kMaxReport))
      return fail("reported more than " + std::to_string(kMaxReport) + " bytes instead of a port", true);
    if (got == 0 || text.find('\n') != std::string::npos) {  // a whole line, or the daemon closed its end
      if (const auto port = parse_port_report(text)) {
        close(report);
        return {pid, port};
      }
      if (error_report) {  // the daemon's own reason; it exits (reaped here) and its log adds nothing
        close(report);
        stop_daemon({pid, 0}, std::chrono::milliseconds(1000));
        throw std::runtime_error("rdzvd " + reported_failure(text, spec));
      }
      // Closed, or a whole line, without a port: an exiting daemon's status says why.
      for (int i = 0; i < 200; ++i) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return fail(describe_exit(status, spec), false);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return fail("reported '" + text.substr(0, text.find('\n')) + "', which is not a port", true);
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      // Exited between two polls: what it wrote before is still in the pipe.
      for (ssize_t more; (more = read(report, chunk, sizeof chunk)) > 0 && text.size() < kMaxErrorReport;)
        text.append(chunk, static_cast<std::size_t>(more));
      if (text.starts_with("error: ") || text.starts_with("log-errno ")) {
        close(report);
        throw std::runtime_error("rdzvd " + reported_failure(text, spec));
      }
      return fail(describe_exit(status, spec), false);
    }
  }
}

void finish_daemon(const RunningDaemon& daemon, std::chrono::milliseconds drain, std::chrono::milliseconds grace) {
  if (daemon.pid <= 0) return;
  int status = 0;
  if (waitpid(daemon.pid, &status, WNOHANG) != 0) return;
  kill(daemon.pid, SIGUSR1);
  const auto deadline = drain == kDrainWhileMembersRemain ? Clock::time_point::max() : Clock::now() + drain;
  while (Clock::now() < deadline) {
    if (waitpid(daemon.pid, &status, WNOHANG) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop_daemon(daemon, grace);
}

void stop_daemon(const RunningDaemon& daemon, std::chrono::milliseconds grace) {
  if (daemon.pid <= 0) return;
  int status = 0;
  if (waitpid(daemon.pid, &status, WNOHANG) != 0) return;  // exited, or reaped by slurmstepd
  kill(daemon.pid, SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    if (waitpid(daemon.pid, &status, WNOHANG) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(daemon.pid, SIGKILL);
  waitpid(daemon.pid, &status, 0);
}

}  // namespace llmrdzv::launch
