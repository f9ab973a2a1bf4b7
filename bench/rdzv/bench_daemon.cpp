// Starting, measuring and stopping the benchmark's own rdzvd (see bench_daemon.hpp).
#include "bench_daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "llmrdzv/common/token.hpp"

namespace llmrdzv::bench {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool exited_within(pid_t pid, std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  do {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < give_up);
  return false;
}

}  // namespace

BenchDaemon::BenchDaemon(const std::string& rdzvd_path, const std::string& rdzv_id) : token_(make_random_token()) {
  std::string pattern = (std::filesystem::temp_directory_path() / "rdzv-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  scratch_ = pattern;
  const std::string token_file = scratch_ + "/token";
  const std::string port_file = scratch_ + "/port";
  const std::string log_file = scratch_ + "/rdzvd.log";
  std::ofstream(token_file) << token_;

  pid_ = fork();
  if (pid_ == 0) {
    const int log = open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(log, STDERR_FILENO);
    dup2(log, STDOUT_FILENO);
    execl(rdzvd_path.c_str(), rdzvd_path.c_str(), "--listen", "127.0.0.1:0", "--port-file", port_file.c_str(),
          "--mode", "step", "--rdzv-id", rdzv_id.c_str(), "--token-file", token_file.c_str(), "--log-level", "warn",
          "--heartbeat-timeout", "120000", static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid_ < 0) throw std::runtime_error("fork failed");
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    std::istringstream text(read_file(port_file));
    if (text >> port_ && port_ > 0) return;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string log = read_file(log_file);
  throw std::runtime_error("rdzvd (" + rdzvd_path + ") did not start; its output:\n" + log);
}

BenchDaemon::~BenchDaemon() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    if (!exited_within(pid_, std::chrono::seconds(5))) {
      kill(pid_, SIGKILL);
      exited_within(pid_, std::chrono::seconds(5));
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(scratch_, ignored);
}

std::optional<double> peak_rss_mib(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) {
      std::istringstream fields(line.substr(6));
      double kib = 0;
      if (fields >> kib) return kib / 1024.0;
    }
  }
  return std::nullopt;
}

std::optional<double> cpu_time_ms(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto after_name = stat.rfind(')');  // the command name may contain spaces
  if (after_name == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(after_name + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {  // fields 14 and 15: utime, stime
    if (index == 14) utime = std::stod(field);
    if (index == 15) stime = std::stod(field);
  }
  return (utime + stime) * 1000.0 / double(sysconf(_SC_CLK_TCK));
}

}  // namespace llmrdzv::bench
