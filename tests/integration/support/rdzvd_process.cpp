// Starting a real rdzvd and reading back its port (see rdzvd_process.hpp).
#include "rdzvd_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <thread>

#include "llmrdzv/common/token.hpp"

namespace llmrdzv::testing {

std::string rdzvd_path() { return LLMRDZV_RDZVD_PATH; }
std::string test_client_path() { return LLMRDZV_TEST_CLIENT_PATH; }
std::string rdzvctl_path() { return LLMRDZV_RDZVCTL_PATH; }

RdzvdProcess::RdzvdProcess(const ScratchDir& dir, RdzvdConfig config) : config_(std::move(config)) {
  static int started = 0;  // a fresh log per daemon, also for several of one rendezvous id in a dir
  const std::string stem = "rdzvd-" + config_.rdzv_id + "-" + std::to_string(++started);
  launch::LaunchSpec spec;
  spec.program = rdzvd_path();
  spec.pass_environment = {"LD_LIBRARY_PATH"};  // gRPC may live outside the system's library path
  spec.args = {"--listen", config_.listen, "--mode", config_.mode};
  if (config_.mode == "site") {
    site_secret_ = make_random_token();
    token_ = token_for(config_.rdzv_id);
    spec.args.insert(spec.args.end(), {"--site-secret-file", dir.write(stem + ".secret", site_secret_)});
  } else {
    token_ = config_.token.empty() ? make_random_token() : config_.token;
    spec.args.insert(spec.args.end(), {"--rdzv-id", config_.rdzv_id});
    spec.token = token_;
  }
  spec.args.insert(spec.args.end(), {"--heartbeat-interval", std::to_string(config_.heartbeat_interval.count()),
                                     "--heartbeat-timeout", std::to_string(config_.heartbeat_timeout.count())});
  spec.args.insert(spec.args.end(), config_.extra_args.begin(), config_.extra_args.end());
  log_path_ = dir.file(stem + ".log");
  spec.log_path = log_path_;
  try {
    daemon_ = launch::start_daemon(spec);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "; its output:\n" + log());
  }
  port_ = daemon_.port;
}

RdzvdProcess::~RdzvdProcess() { launch::stop_daemon(daemon_, std::chrono::milliseconds(0)); }

void RdzvdProcess::send_signal(int signal) const { kill(daemon_.pid, signal); }

std::optional<int> RdzvdProcess::wait(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!exit_status_) {
    int status = 0;
    if (waitpid(daemon_.pid, &status, WNOHANG) == daemon_.pid) {
      exit_status_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_status_;
}

std::string RdzvdProcess::log() const { return read_file(log_path_); }

std::string RdzvdProcess::token_for(const std::string& rdzv_id) const {
  return site_token(site_secret_, std::uint32_t(getuid()), rdzv_id);
}

client::Options RdzvdProcess::client_options(std::int32_t world_size) const {
  client::Options options;
  options.endpoint = endpoint();
  options.rdzv_id = config_.rdzv_id;
  options.token = token_;
  options.min_world = options.max_world = world_size;
  options.connect_timeout = std::chrono::seconds(10);
  options.join_timeout = std::chrono::seconds(60);
  return options;
}

std::map<std::string, std::optional<std::string>> RdzvdProcess::client_env(std::int32_t world_size) const {
  return {{"RDZV_ENDPOINT", endpoint()},
          {"RDZV_ID", config_.rdzv_id},
          {"RDZV_TOKEN", token_},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LLM_RDZV_TIMEOUT", "60"},
          {"SLURM_PROCID", std::nullopt},
          {"RANK", std::nullopt},
          {"LOCAL_RANK", std::nullopt},
          {"LLM_RDZV_PORT_RANGE", std::nullopt},
          {"LLM_RDZV_MIN_WORLD", std::nullopt},
          {"LLM_RDZV_MAX_WORLD", std::nullopt}};
}

}  // namespace llmrdzv::testing
