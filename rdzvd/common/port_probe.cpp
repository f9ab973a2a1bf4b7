// Port ranges and the probe sequence (see port_probe.hpp).
#include "llmrdzv/common/port_probe.hpp"

#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv {
namespace {

std::optional<std::uint32_t> parse_port(std::string_view text) {
  const auto value = parse_unsigned(text, 1, 65535);
  if (!value) return std::nullopt;
  return std::uint32_t(*value);
}

}  // namespace

std::optional<PortRange> parse_port_range(std::string_view text) {
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto port = parse_port(text);
    if (!port) return std::nullopt;
    return PortRange{std::uint16_t(*port), std::uint16_t(*port)};
  }
  auto lo = parse_port(text.substr(0, dash));
  auto hi = parse_port(text.substr(dash + 1));
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return PortRange{std::uint16_t(*lo), std::uint16_t(*hi)};
}

std::uint16_t probe_port(const PortRange& range, std::uint16_t base, std::uint32_t attempt) {
  const std::uint32_t offset = range.contains(base) ? std::uint32_t(base - range.lo) : 0;
  return std::uint16_t(range.lo + (offset + attempt) % range.size());
}


}  // namespace llmrdzv
