// Parsers for the plugin's key=value vocabulary (see args.hpp).
#include "args.hpp"

#include "llmrdzv/common/text_values.hpp"

#include <charconv>

namespace llmrdzv::spank {
namespace {

std::string quoted(std::string_view value) { return "'" + std::string(value) + "'"; }

[[noreturn]] void fail(std::string_view key, std::string_view value, std::string_view why) {
  throw ArgError(std::string(key) + ": " + quoted(value) + " " + std::string(why));
}

}  // namespace

std::vector<KeyValue> split_key_values(std::string_view text) {
  std::vector<KeyValue> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto end = comma == std::string_view::npos ? text.size() : comma;
    const auto item = text.substr(start, end - start);
    if (item.empty()) {
      throw ArgError("empty item at position " + std::to_string(start + 1) + " of " + quoted(text) +
                     " (expected key=value,key=value)");
    }
    const auto eq = item.find('=');
    KeyValue kv;
    kv.key = std::string(item.substr(0, eq));
    if (eq != std::string_view::npos) {
      kv.value = std::string(item.substr(eq + 1));
      kv.has_value = true;
    }
    if (kv.key.empty()) throw ArgError("missing key before '=' in " + quoted(item));
    for (const KeyValue& earlier : items) {
      if (earlier.key == kv.key) throw ArgError("'" + kv.key + "' is given twice in " + quoted(text));
    }
    items.push_back(std::move(kv));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

std::uint32_t parse_count(std::string_view key, std::string_view value, std::uint32_t min,
                          std::uint32_t max) {
  if (!parse_unsigned(value, 0, UINT64_MAX)) fail(key, value, "is not a whole number");
  const auto number = parse_unsigned(value, min, max);
  if (!number) fail(key, value, "is out of range " + std::to_string(min) + ".." + std::to_string(max));
  return std::uint32_t(*number);
}

void require_once(std::vector<std::string>& seen, const std::string& key) {
  for (const std::string& earlier : seen) {
    if (earlier == key) throw ArgError("'" + key + "' is given twice");
  }
  seen.push_back(key);
}

PortRange parse_ports(std::string_view key, std::string_view value) {
  const auto range = parse_port_range(value);
  if (!range) fail(key, value, "is not a port (1..65535) or a range LO-HI with LO <= HI");
  return *range;
}

PortRange parse_step_ports(std::string_view key, std::string_view value) {
  const PortRange range = parse_ports(key, value);
  if (range.lo == range.hi) {
    fail(key, value, "is a single port; a step needs two, one for rdzvd and one for MASTER_PORT: give a range LO-HI");
  }
  if (range.lo < 1024) fail(key, value, "reaches below 1024; rdzvd runs as the job's user, who cannot bind such ports");
  return range;
}

NodeBounds parse_node_bounds(std::string_view key, std::string_view value) {
  const auto colon = value.find(':');
  NodeBounds bounds;
  if (colon == std::string_view::npos) {
    bounds.min = bounds.max = parse_count(key, value, 1, 1u << 20);
    return bounds;
  }
  bounds.min = parse_count(key, value.substr(0, colon), 1, 1u << 20);
  bounds.max = parse_count(key, value.substr(colon + 1), 1, 1u << 20);
  if (bounds.min > bounds.max) fail(key, value, "has MIN greater than MAX (expected MIN:MAX)");
  return bounds;
}

AddrPolicy parse_addr_policy(std::string_view key, std::string_view value) {
  if (value == "hostname") return {AddrPolicy::Kind::hostname, {}};
  if (value == "ip") return {AddrPolicy::Kind::ip, {}};
  constexpr std::string_view iface_prefix = "iface:";
  if (value.starts_with(iface_prefix) && value.size() > iface_prefix.size()) {
    const auto name = value.substr(iface_prefix.size());
    if (name.size() >= 16 || name.find('/') != std::string_view::npos) {
      fail(key, value, "names an impossible interface");
    }
    return {AddrPolicy::Kind::iface, std::string(name)};
  }
  fail(key, value, "is not one of hostname, ip, iface:NAME");
}

Mode parse_mode(std::string_view key, std::string_view value) {
  if (value == "step") return Mode::step;
  if (value == "site") return Mode::site;
  fail(key, value, "is not one of step, site");
}

bool parse_switch(std::string_view key, std::string_view value) {
  if (value == "on" || value == "yes" || value == "true" || value == "1") return true;
  if (value == "off" || value == "no" || value == "false" || value == "0") return false;
  fail(key, value, "is not on or off");
}

std::string parse_rdzv_id(std::string_view key, std::string_view value) {
  if (value.empty() || value.size() > 128) fail(key, value, "must be 1 to 128 characters");
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) fail(key, value, "may only hold letters, digits and . _ : -");
  }
  return std::string(value);
}

std::string parse_endpoint(std::string_view key, std::string_view value) {
  if (!parse_host_port(value)) fail(key, value, "is not HOST:PORT with PORT in 1..65535");
  return std::string(value);
}

void check_outside_ephemeral(std::string_view key, const PortRange& range,
                             const PortRange& ephemeral) {
  if (range.hi < ephemeral.lo || range.lo > ephemeral.hi) return;
  fail(key, describe(range),
       "overlaps the kernel's ephemeral ports " + describe(ephemeral) +
           " (net.ipv4.ip_local_port_range); pick ports outside it");
}

std::string describe(const PortRange& range) {
  if (range.lo == range.hi) return std::to_string(range.lo);
  return std::to_string(range.lo) + "-" + std::to_string(range.hi);
}

}  // namespace llmrdzv::spank
