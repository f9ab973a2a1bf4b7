// Loopback ports for tests that place things on chosen ports: a listening socket on a port, and a
// range of ports that are free right now (below the ephemeral range, so nothing grabs them).
#pragma once

#include <cstdint>

#include "llmrdzv/common/port_probe.hpp"

namespace llmrdzv::testing {

// A listening TCP socket on 127.0.0.1:port that never accepts, or -1 if the port is taken.
int listen_on(std::uint16_t port);

// `size` consecutive ports that are all free; throws if none are found.
PortRange free_port_range(std::uint16_t size);

}  // namespace llmrdzv::testing
