// Parser of the plugin's plugstack.conf arguments (see site_config.hpp).
#include "site_config.hpp"

#include <algorithm>

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

const std::vector<KeySpec<SiteConfig>>& site_keys() {
  using C = SiteConfig;
  using K = KeyValue;
  static const std::vector<KeySpec<SiteConfig>> keys = {
      {"rdzvd", "PATH", [](C& c, const K& kv) { c.rdzvd_path = absolute_path(kv); }},
      {"port_range", "LO-HI", [](C& c, const K& kv) { c.port_range = parse_step_ports(kv.key, kv.value); }},
      {"port_probes", "N", [](C& c, const K& kv) { c.port_probes = parse_count(kv.key, kv.value, 1, 64); }},
      {"mode", "step|site", [](C& c, const K& kv) { c.mode = parse_mode(kv.key, kv.value); }},
      {"server", "HOST:PORT", [](C& c, const K& kv) { c.server = parse_endpoint(kv.key, kv.value); }},
      {"secret_file", "PATH", [](C& c, const K& kv) { c.secret_file = absolute_path(kv); }},
      {"addr", "hostname|ip|iface:NAME", [](C& c, const K& kv) { c.addr = parse_addr_policy(kv.key, kv.value); }},
      {"timeout", "SECONDS", [](C& c, const K& kv) { c.timeout_s = parse_count(kv.key, kv.value, 1, 7 * 24 * 3600); }},
      {"heartbeat_interval", "MS",
       [](C& c, const K& kv) { c.heartbeat_interval_ms = parse_count(kv.key, kv.value, 1, kMaxMs); }},
      {"heartbeat_timeout", "MS",
       [](C& c, const K& kv) { c.heartbeat_timeout_ms = parse_count(kv.key, kv.value, 1, kMaxMs); }},
      {"last_call", "MS", [](C& c, const K& kv) { c.last_call_ms = parse_count(kv.key, kv.value, 1, kMaxMs); }},
      {"idle_timeout", "SECONDS",
       [](C& c, const K& kv) { c.idle_timeout_s = parse_count(kv.key, kv.value, 1, 7 * 24 * 3600); }},
      {"start_timeout", "MS", [](C& c, const K& kv) { c.start_timeout_ms = parse_count(kv.key, kv.value, 100, 600000); }},
      {"log_dir", "PATH", [](C& c, const K& kv) { c.log_dir = absolute_path(kv); }},
      {"log_level", "debug|info|warn|error",
       [](C& c, const K& kv) {
         if (kv.value != "debug" && kv.value != "info" && kv.value != "warn" && kv.value != "error") {
           throw ArgError("log_level: '" + kv.value + "' is not one of debug, info, warn, error");
         }
         c.log_level = kv.value;
       }},
      {"default", "on|off", [](C& c, const K& kv) { c.default_on = parse_switch(kv.key, kv.value); }},
  };
  return keys;
}

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
    const auto* key = find_key(site_keys(), kv.key);
    if (key == nullptr) {
      throw ArgError("unknown plugstack.conf argument '" + kv.key + "' (known: " + key_names(site_keys()) + ")");
    }
    require_once(seen, kv.key);
    key->apply(config, kv);
  }
  if (std::find(seen.begin(), seen.end(), "port_range") != seen.end())
    check_outside_ephemeral("port_range", config.port_range, ephemeral);
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
