// Parser of the user's --llm-rdzv argument (see user_options.hpp).
#include "user_options.hpp"

namespace llmrdzv::spank {

const std::vector<KeySpec<UserOptions>>& user_keys() {
  static const std::vector<KeySpec<UserOptions>> keys = {
      {"port", "LO-HI", [](UserOptions& o, const KeyValue& kv) { o.ports = parse_step_ports(kv.key, kv.value); }},
      {"nodes", "MIN:MAX", [](UserOptions& o, const KeyValue& kv) { o.nodes = parse_node_bounds(kv.key, kv.value); }},
      {"timeout", "SECONDS",
       [](UserOptions& o, const KeyValue& kv) { o.timeout_s = parse_count(kv.key, kv.value, 1, 7 * 24 * 3600); }},
      {"addr", "hostname|ip|iface:NAME",
       [](UserOptions& o, const KeyValue& kv) { o.addr = parse_addr_policy(kv.key, kv.value); }},
      {"id", "NAME", [](UserOptions& o, const KeyValue& kv) { o.id = parse_rdzv_id(kv.key, kv.value); }},
      {"mode", "step|site", [](UserOptions& o, const KeyValue& kv) { o.mode = parse_mode(kv.key, kv.value); }},
  };
  return keys;
}

std::string user_option_usage() {
  std::string args;
  for (const auto& key : user_keys()) {
    args += std::string(key.name) + "=" + std::string(key.syntax) + ", ";
  }
  return "Rendezvous for distributed training: sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, "
         "LOCAL_RANK, RDZV_ENDPOINT, RDZV_ID, RDZV_TOKEN... in every task and runs a per-step rdzvd. "
         "ARGS: " + args + "or off";
}

UserOptions parse_user_options(const char* arg) {
  UserOptions options;
  if (arg == nullptr || *arg == '\0') return options;
  const std::string_view text(arg);
  if (text == "off") {
    options.enabled = false;
    return options;
  }
  for (const auto& kv : split_key_values(text)) {
    const auto* key = find_key(user_keys(), kv.key);
    if (key == nullptr) {
      throw ArgError("unknown key '" + kv.key + "' (known: " + key_names(user_keys()) + "; or the single word off)");
    }
    if (!kv.has_value) {
      throw ArgError("'" + kv.key + "' needs a value (" + kv.key + "=" + std::string(key->syntax) +
                     "), or use the single word off");
    }
    key->apply(options, kv);
  }
  return options;
}

}  // namespace llmrdzv::spank
