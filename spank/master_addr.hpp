// MASTER_ADDR from the step's first node name and the addr= policy. Every node computes it on
// its own, so the answer must depend only on the name and on what all nodes agree on (name
// resolution; the subnet of a named interface, which a site's nodes share).
#pragma once

#include <string>

#include "args.hpp"

namespace llmrdzv::spank {

// hostname: the node name itself. ip: its first IPv4 address from name resolution.
// iface:NAME: the address of the first node that lies in the IPv4 subnet of this node's
// interface NAME (for a fabric with its own subnet, e.g. iface:ib0). Throws ArgError.
std::string master_address(const AddrPolicy& policy, const std::string& first_node);

}  // namespace llmrdzv::spank
