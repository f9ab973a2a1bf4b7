// Starting, measuring and stopping the benchmark's own rdzvd (see bench_daemon.hpp).
#include "bench_daemon.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "llmrdzv/common/token.hpp"
#include "llmrdzv/launch/daemon_launch.hpp"

namespace llmrdzv::bench {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

BenchDaemon::BenchDaemon(const std::string& rdzvd_path, const std::string& rdzv_id, const std::string& metrics_listen)
    : token_(make_random_token()) {
  std::string pattern = (std::filesystem::temp_directory_path() / "rdzv-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  scratch_ = pattern;
  launch::LaunchSpec spec;
  spec.program = rdzvd_path;
  spec.pass_environment = {"LD_LIBRARY_PATH"};  // gRPC may live outside the system's library path
  spec.args = {"--listen", "127.0.0.1:0", "--mode", "step", "--rdzv-id", rdzv_id, "--log-level", "warn",
               "--heartbeat-timeout", "120000"};
  if (!metrics_listen.empty()) spec.args.insert(spec.args.end(), {"--metrics-listen", metrics_listen});
  spec.token = token_;
  spec.log_path = scratch_ + "/rdzvd.log";
  try {
    daemon_ = launch::start_daemon(spec);
  } catch (const std::exception& e) {
    const std::string log = read_file(spec.log_path);
    std::error_code ignored;
    std::filesystem::remove_all(scratch_, ignored);
    throw std::runtime_error(std::string(e.what()) + "; its output:\n" + log);
  }
}

BenchDaemon::~BenchDaemon() {
  launch::stop_daemon(daemon_, std::chrono::seconds(5));
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
