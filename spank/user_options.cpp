// Parser of the user's --llm-rdzv argument (see user_options.hpp).
#include "user_options.hpp"

namespace llmrdzv::spank {

UserOptions parse_user_options(const char* arg) {
  UserOptions options;
  if (arg == nullptr || *arg == '\0') return options;
  const std::string_view text(arg);
  if (text == "off") {
    options.enabled = false;
    return options;
  }
  for (const auto& kv : split_key_values(text)) {
    if (!kv.has_value) {
      throw ArgError("'" + kv.key + "' needs a value (" + kv.key + "=...), or use the single word off");
    }
    if (kv.key == "port") {
      options.ports = parse_step_ports(kv.key, kv.value);
    } else if (kv.key == "nodes") {
      options.nodes = parse_node_bounds(kv.key, kv.value);
    } else if (kv.key == "timeout") {
      options.timeout_s = parse_count(kv.key, kv.value, 1, 7 * 24 * 3600);
    } else if (kv.key == "addr") {
      options.addr = parse_addr_policy(kv.key, kv.value);
    } else if (kv.key == "id") {
      options.id = parse_rdzv_id(kv.key, kv.value);
    } else if (kv.key == "mode") {
      options.mode = parse_mode(kv.key, kv.value);
    } else {
      throw ArgError("unknown key '" + kv.key +
                     "' (known: port, nodes, timeout, addr, id, mode; or the single word off)");
    }
  }
  return options;
}

}  // namespace llmrdzv::spank
