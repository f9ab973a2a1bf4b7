// The small vocabulary shared by the two places the plugin reads text from: the user's
// `--llm-rdzv=k=v,...` option and the site's plugstack.conf arguments. Both throw ArgError
// with a message that names the offending key and value, so the SPANK glue can print it as is.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrdzv/common/port_probe.hpp"

namespace llmrdzv::spank {

struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where a rendezvous lives: a per-step rdzvd on the step's first node, or the site's rdzvd.
enum class Mode { step, site };

// How MASTER_ADDR (and the host of RDZV_ENDPOINT in step mode) names the step's first node.
struct AddrPolicy {
  enum class Kind { hostname, ip, iface };
  Kind kind = Kind::hostname;
  std::string iface;  // only for Kind::iface
  bool operator==(const AddrPolicy&) const = default;
};

// nodes=MIN:MAX, an elastic node count (MIN == MAX is a fixed size).
struct NodeBounds {
  std::uint32_t min = 0;
  std::uint32_t max = 0;
  bool operator==(const NodeBounds&) const = default;
};

// "key=value" → {key, value}; a bare "key" → {key, ""} with has_value false.
struct KeyValue {
  std::string key;
  std::string value;
  bool has_value = false;
};

// One key a parser knows: its name, the shape of its value (for usage texts), and how it sets
// its field. Each parser has exactly one table of these; its usage text, its "known: ..." error
// and the man page check are all made from it.
template <class Settings>
struct KeySpec {
  std::string_view name;
  std::string_view syntax;  // e.g. "LO-HI"
  void (*apply)(Settings&, const KeyValue&);
};

// "a, b, c": the names of a key table.
template <class Settings>
std::string key_names(const std::vector<KeySpec<Settings>>& keys) {
  std::string names;
  for (const auto& key : keys) {
    if (!names.empty()) names += ", ";
    names += key.name;
  }
  return names;
}

// The entry of `keys` named `name`, or nullptr.
template <class Settings>
const KeySpec<Settings>* find_key(const std::vector<KeySpec<Settings>>& keys, std::string_view name) {
  for (const auto& key : keys)
    if (key.name == name) return &key;
  return nullptr;
}

// Splits "a=1,b=2" at commas; empty items (",,") and a key given twice are errors naming them.
std::vector<KeyValue> split_key_values(std::string_view text);
// Throws ArgError when `key` is in `seen`, else adds it (keys split from several texts).
void require_once(std::vector<std::string>& seen, const std::string& key);

// Each parser names `key` in its error so messages read "port: '70000' is not ...".
std::uint32_t parse_count(std::string_view key, std::string_view value, std::uint32_t min,
                          std::uint32_t max);
PortRange parse_ports(std::string_view key, std::string_view value);
// A port range for steps: at least two ports (rdzvd and MASTER_PORT must differ) and none below
// 1024 (rdzvd runs as the job's user, who cannot bind those).
PortRange parse_step_ports(std::string_view key, std::string_view value);
NodeBounds parse_node_bounds(std::string_view key, std::string_view value);
AddrPolicy parse_addr_policy(std::string_view key, std::string_view value);
Mode parse_mode(std::string_view key, std::string_view value);
bool parse_switch(std::string_view key, std::string_view value);

// A rendezvous id chosen by a user: 1..128 characters of [A-Za-z0-9._:-].
std::string parse_rdzv_id(std::string_view key, std::string_view value);

// "host:port" with a non-empty host and port 1..65535.
std::string parse_endpoint(std::string_view key, std::string_view value);

// Fails when `range` overlaps the kernel's ephemeral ports: an outgoing connection could then
// take the port rdzvd or c10d's store needs.
void check_outside_ephemeral(std::string_view key, const PortRange& range,
                             const PortRange& ephemeral);

std::string describe(const PortRange& range);

}  // namespace llmrdzv::spank
