// Starting a real rdzvd and reading back its port (see rdzvd_process.hpp).
#include "rdzvd_process.hpp"

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
  const std::string stem = "rdzvd-" + config_.rdzv_id;
  const std::string port_file = dir.file(stem + ".port");
  std::vector<std::string> argv = {rdzvd_path(), "--listen", config_.listen, "--port-file", port_file, "--mode",
                                   config_.mode};
  if (config_.mode == "site") {
    site_secret_ = make_random_token();
    token_ = token_for(config_.rdzv_id);
    argv.insert(argv.end(), {"--site-secret-file", dir.write(stem + ".secret", site_secret_)});
  } else {
    token_ = config_.token.empty() ? make_random_token() : config_.token;
    argv.insert(argv.end(), {"--rdzv-id", config_.rdzv_id, "--token-file", dir.write(stem + ".token", token_)});
  }
  argv.insert(argv.end(), {"--heartbeat-interval", std::to_string(config_.heartbeat_interval.count()),
                           "--heartbeat-timeout", std::to_string(config_.heartbeat_timeout.count())});
  argv.insert(argv.end(), config_.extra_args.begin(), config_.extra_args.end());
  process_ = std::make_unique<ChildProcess>(argv, std::map<std::string, std::optional<std::string>>{},
                                            dir.file(stem + ".log"));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    std::ifstream file(port_file);
    unsigned port = 0;
    if (file >> port && port > 0 && port < 65536) {
      port_ = std::uint16_t(port);
      return;
    }
    if (process_->wait(std::chrono::milliseconds(0))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("rdzvd did not write its port file; its stderr:\n" + log());
}

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
