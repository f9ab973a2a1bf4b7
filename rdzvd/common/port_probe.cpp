// Implementation of the deterministic step-port scheme (see port_probe.hpp).
#include "llmrdzv/common/port_probe.hpp"

#include "llmrdzv/common/text_values.hpp"


namespace llmrdzv {
namespace {

std::optional<std::uint32_t> parse_port(std::string_view text) {
  const auto value = parse_unsigned(text, 1, 65535);
  if (!value) return std::nullopt;
  return std::uint32_t(*value);
}

// splitmix64 finaliser: a cheap, well-mixed hash so nearby job ids land far apart.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
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

std::uint16_t step_port(const PortRange& range, std::uint64_t job_id, std::uint64_t step_id,
                        PortPurpose purpose) {
  const std::uint64_t key = mix(job_id) ^ mix(step_id + 0x5851f42d4c957f2dULL);
  const std::uint16_t rdzvd_port =
      std::uint16_t(range.lo + mix(key ^ std::uint64_t(PortPurpose::rdzvd)) % range.size());
  if (purpose == PortPurpose::rdzvd) return rdzvd_port;
  const std::uint16_t master =
      std::uint16_t(range.lo + mix(key ^ std::uint64_t(PortPurpose::master)) % range.size());
  return master == rdzvd_port ? probe_port(range, master, 1) : master;
}

}  // namespace llmrdzv
