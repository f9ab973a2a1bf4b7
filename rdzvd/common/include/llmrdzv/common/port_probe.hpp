// Port ranges and the probe sequence, shared by the SPANK plugin, rdzvd and the client library.
//
// Every node of a step must agree on MASTER_PORT and on where rdzvd listens. srun picks both at
// random and hands them to the nodes; a step no srun starts (one node) draws them itself
// (spank/step_env.hpp). If rdzvd's port is taken, rdzvd and its clients walk the same probe
// sequence from that base; a client that reaches an rdzvd serving another rendezvous id moves on
// (see proto: "foreign-rendezvous:").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace llmrdzv {

struct PortRange {
  std::uint16_t lo = 29500;
  std::uint16_t hi = 29999;
  std::uint32_t size() const { return std::uint32_t(hi) - lo + 1; }
  bool contains(std::uint32_t port) const { return port >= lo && port <= hi; }
};

// Parses "LO-HI" or a single "PORT" (1..65535, LO <= HI). Returns nullopt on any malformed text.
std::optional<PortRange> parse_port_range(std::string_view text);

// The attempt-th candidate (0 = base) of the probe sequence starting at base, wrapping in range.
std::uint16_t probe_port(const PortRange& range, std::uint16_t base, std::uint32_t attempt);

// How many candidates rdzvd and clients try by default before giving up.
inline constexpr std::uint32_t kDefaultPortProbes = 8;

}  // namespace llmrdzv
