// fork/exec, pipes and reaping for ChildProcess (see child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace llmrdzv::testing {
namespace {

std::vector<std::string> merged_environment(const std::map<std::string, std::optional<std::string>>& overrides) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const auto equals = text.find('=');
    if (equals != std::string::npos) merged[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : overrides) {
    if (value) {
      merged[name] = *value;
    } else {
      merged.erase(name);
    }
  }
  std::vector<std::string> result;
  for (const auto& [name, value] : merged) result.push_back(name + "=" + value);
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv,
                           const std::map<std::string, std::optional<std::string>>& env, std::string stderr_path)
    : stderr_path_(std::move(stderr_path)) {
  if (access(argv.at(0).c_str(), X_OK) != 0) throw std::runtime_error("not an executable: " + argv[0]);
  auto environment = merged_environment(env);
  auto argv_pointers = pointers(argv);
  auto env_pointers = pointers(environment);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const int stderr_fd = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (stderr_fd < 0) throw std::runtime_error("cannot create " + stderr_path_);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(stderr_fd, STDERR_FILENO);
    execve(argv_pointers[0], argv_pointers.data(), env_pointers.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  close(stderr_fd);
  if (pid_ < 0) {
    close(pipe_fds[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  stdout_fd_ = pipe_fds[0];
}

ChildProcess::~ChildProcess() {
  if (!exit_status_) {
    kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

void ChildProcess::drain_stdout(std::chrono::milliseconds timeout) {
  if (stdout_closed_) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  pollfd poll_fd{stdout_fd_, POLLIN, 0};
  if (poll(&poll_fd, 1, int(timeout.count())) <= 0) return;
  char chunk[65536];
  const ssize_t got = ::read(stdout_fd_, chunk, sizeof chunk);
  if (got > 0) {
    buffer_.append(chunk, std::size_t(got));
  } else if (got == 0 || errno != EINTR) {
    stdout_closed_ = true;
  }
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (stdout_closed_) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    drain_stdout(left);
  }
}

std::vector<std::string> ChildProcess::read_remaining_lines(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> lines;
  while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
             give_up - std::chrono::steady_clock::now()))) {
    lines.push_back(*line);
  }
  return lines;
}

void ChildProcess::send_signal(int signal) {
  if (!exit_status_) kill(pid_, signal);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!exit_status_) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= give_up) return std::nullopt;
    drain_stdout(std::chrono::milliseconds(5));
  }
  return exit_status_;
}

std::string ChildProcess::stderr_text() const {
  std::ifstream file(stderr_path_);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace llmrdzv::testing
