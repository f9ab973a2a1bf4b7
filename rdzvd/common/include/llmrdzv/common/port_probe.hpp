// Port ranges and the probe sequence, shared by the SPANK plugin, rdzvd and the client library.
//
// Every node of a step must agree on MASTER_PORT and on where rdzvd listens. srun picks both at
// random and hands them to the nodes (spank/step_env.hpp); steps no srun starts derive them from
// (job id, step id) hashed into the site's port range (step_port). If rdzvd's port is taken, rdzvd
// and its clients walk the same probe sequence from that base; a client that reaches an rdzvd
// serving another rendezvous id moves on (see proto: "foreign-rendezvous:").
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

enum class PortPurpose : std::uint64_t { rdzvd = 0x72647a7664ULL, master = 0x6d6173746572ULL };

// The base port of a step for one purpose. The rdzvd and master ports of one step always differ
// when the range holds at least two ports.
std::uint16_t step_port(const PortRange& range, std::uint64_t job_id, std::uint64_t step_id,
                        PortPurpose purpose);

// The attempt-th candidate (0 = base) of the probe sequence starting at base, wrapping in range.
std::uint16_t probe_port(const PortRange& range, std::uint16_t base, std::uint32_t attempt);

// How many candidates rdzvd and clients try by default before giving up.
inline constexpr std::uint32_t kDefaultPortProbes = 8;

}  // namespace llmrdzv
