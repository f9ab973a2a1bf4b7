// MASTER_ADDR policies against this machine's real resolver and interfaces.
#include <catch2/catch.hpp>

#include "master_addr.hpp"

using namespace llmrdzv::spank;
using Catch::Matchers::Contains;

TEST_CASE("hostname policy keeps the node name") {
  CHECK(master_address({AddrPolicy::Kind::hostname, {}}, "node-a") == "node-a");
}

TEST_CASE("ip policy resolves the first node") {
  CHECK(master_address({AddrPolicy::Kind::ip, {}}, "localhost") == "127.0.0.1");
  CHECK_THROWS_WITH(master_address({AddrPolicy::Kind::ip, {}}, "no-such-node.invalid"),
                    Contains("addr: cannot resolve the first node 'no-such-node.invalid'"));
}

TEST_CASE("iface policy picks the address in the interface's subnet") {
  CHECK(master_address({AddrPolicy::Kind::iface, "lo"}, "localhost") == "127.0.0.1");
  CHECK_THROWS_WITH(master_address({AddrPolicy::Kind::iface, "nosuchif0"}, "localhost"),
                    Contains("this node has no interface nosuchif0"));
}

TEST_CASE("iface policy refuses a first node outside the interface's subnet") {
  CHECK_THROWS_WITH(master_address({AddrPolicy::Kind::iface, "lo"}, "192.0.2.77"),
                    Contains("the first node '192.0.2.77' has no address in the subnet of lo"));
}
