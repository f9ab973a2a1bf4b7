// Parser of the plugin's plugstack.conf arguments (see site_config.hpp).
#include "site_config.hpp"

namespace llmrdzv::spank {
namespace {

std::string absolute_path(const KeyValue& kv) {
  if (kv.value.empty() || kv.value.front() != '/') {
    throw ArgError(kv.key + ": '" + kv.value + "' is not an absolute path");
  }
  return kv.value;
}

constexpr std::uint32_t kMaxMs = 24u * 3600u * 1000u;

}  // namespace

SiteConfig parse_site_config(const std::vector<std::string>& args, std::string default_rdzvd,
                             const PortRange& ephemeral) {
  SiteConfig config;
  config.rdzvd_path = std::move(default_rdzvd);
  std::vector<std::string> seen;
  for (const auto& arg : args) {
    const auto items = split_key_values(arg);
    if (items.size() != 1 || !items.front().has_value) {
      throw ArgError("plugstack.conf argument '" + arg + "' is not key=value");
    }
    const KeyValue& kv = items.front();
    const std::string& k = kv.key;
    require_once(seen, k);
    if (k == "rdzvd") {
      config.rdzvd_path = absolute_path(kv);
    } else if (k == "port_range") {
      config.port_range = parse_step_ports(k, kv.value);
      check_outside_ephemeral(k, config.port_range, ephemeral);
    } else if (k == "port_probes") {
      config.port_probes = parse_count(k, kv.value, 1, 64);
    } else if (k == "mode") {
      config.mode = parse_mode(k, kv.value);
    } else if (k == "server") {
      config.server = parse_endpoint(k, kv.value);
    } else if (k == "secret_file") {
      config.secret_file = absolute_path(kv);
    } else if (k == "addr") {
      config.addr = parse_addr_policy(k, kv.value);
    } else if (k == "timeout") {
      config.timeout_s = parse_count(k, kv.value, 1, 7 * 24 * 3600);
    } else if (k == "heartbeat_interval") {
      config.heartbeat_interval_ms = parse_count(k, kv.value, 1, kMaxMs);
    } else if (k == "heartbeat_timeout") {
      config.heartbeat_timeout_ms = parse_count(k, kv.value, 1, kMaxMs);
    } else if (k == "last_call") {
      config.last_call_ms = parse_count(k, kv.value, 1, kMaxMs);
    } else if (k == "idle_timeout") {
      config.idle_timeout_s = parse_count(k, kv.value, 1, 7 * 24 * 3600);
    } else if (k == "start_timeout") {
      config.start_timeout_ms = parse_count(k, kv.value, 100, 600000);
    } else if (k == "log_dir") {
      config.log_dir = absolute_path(kv);
    } else if (k == "log_level") {
      if (kv.value != "debug" && kv.value != "info" && kv.value != "warn" && kv.value != "error") {
        throw ArgError("log_level: '" + kv.value + "' is not one of debug, info, warn, error");
      }
      config.log_level = kv.value;
    } else if (k == "default") {
      config.default_on = parse_switch(k, kv.value);
    } else {
      throw ArgError("unknown plugstack.conf argument '" + k +
                     "' (known: rdzvd, port_range, port_probes, mode, server, secret_file, addr, "
                     "timeout, heartbeat_interval, heartbeat_timeout, last_call, idle_timeout, "
                     "start_timeout, log_dir, log_level, default)");
    }
  }
  if (config.heartbeat_interval_ms && config.heartbeat_timeout_ms &&
      config.heartbeat_timeout_ms <= config.heartbeat_interval_ms) {
    throw ArgError("heartbeat_timeout must be longer than heartbeat_interval");
  }
  if (config.mode == Mode::site && (!config.server || !config.secret_file)) {
    throw ArgError("mode=site needs server=HOST:PORT and secret_file=PATH");
  }
  return config;
}

}  // namespace llmrdzv::spank
