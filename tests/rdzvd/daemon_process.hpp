// A real rdzvd child process for the daemon's own tests (flags, config, signals, port file):
// spawned with posix_spawn, stderr captured to a file, waited on with a timeout.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "scratch_dir.hpp"

extern char** environ;

namespace llmrdzv::server::testing {

using llmrdzv::testing::read_file;
using llmrdzv::testing::ScratchDir;

class DaemonProcess {
 public:
  // env entries ("K=V") are added to this process' environment for the child.
  DaemonProcess(const std::vector<std::string>& args, const std::string& log_path,
                const std::vector<std::string>& env = {})
      : log_path_(log_path) {
    std::vector<std::string> argv_text = {LLMRDZV_RDZVD_PATH};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
    env_text.insert(env_text.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (log_path + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("posix_spawn rdzvd failed");
  }
  ~DaemonProcess() {
    if (!exit_status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The exit status once the process ended within `limit`; -signal if killed by one.
  std::optional<int> wait(std::chrono::milliseconds limit) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    while (!exit_status_) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() >= give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_status_;
  }

  // Polls the port file rdzvd writes once it listens.
  int port(const std::string& port_file, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < give_up) {
      int port = 0;
      if (std::ifstream(port_file) >> port && port > 0) return port;
      if (wait(std::chrono::milliseconds(0))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("rdzvd wrote no port file; stderr:\n" + log());
  }

  bool log_contains(const std::string& text, std::chrono::milliseconds limit) const {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    do {
      if (log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < give_up);
    return false;
  }

  void signal(int sig) const { kill(pid_, sig); }
  std::string log() const { return read_file(log_path_); }
  std::string out() const { return read_file(log_path_ + ".out"); }
  pid_t pid() const { return pid_; }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

}  // namespace llmrdzv::server::testing
