// MASTER_PORT's check on the step's first node: real sockets of this process, and the
// /proc/net/tcp parser on fixed text.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "port_check.hpp"

using namespace llmrdzv::spank;
using Catch::Matchers::Contains;

namespace {

// A socket bound to an ephemeral port on `address` (listening when `listening`); its port.
struct Socket {
  int fd = -1;
  std::uint16_t port = 0;
  Socket(std::uint32_t address, bool listening) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(address);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    if (listening) REQUIRE(listen(fd, 1) == 0);
    socklen_t size = sizeof addr;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0);
    port = ntohs(addr.sin_port);
  }
  ~Socket() { close(fd); }
};

}  // namespace

TEST_CASE("a port with a listener on any address is taken, and its owner named") {
  for (const std::uint32_t address : {INADDR_ANY, INADDR_LOOPBACK}) {
    Socket squatter(address, true);
    const auto holder = port_taken(squatter.port);
    REQUIRE(holder);
    CHECK_THAT(*holder, Contains("a listening socket of uid " + std::to_string(getuid())));
  }
}

TEST_CASE("a free port is free, and stays free after the check") {
  std::uint16_t port;
  {
    Socket probe(INADDR_LOOPBACK, false);
    port = probe.port;
  }
  CHECK_FALSE(port_taken(port));
  CHECK_FALSE(port_taken(port));  // the check holds nothing back
}

TEST_CASE("the /proc/net/tcp parser finds the listener of a port and nothing else") {
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:51CC 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1\n"
      "   1: 0100007F:51CD 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4243 1\n"
      "   2: 0100007F:51CE 00000000:0000 0A 00000000:00000000 00:00000000 00000000     7        0 4244 1\n"
      "   3: garbage\n";
  CHECK(listener_uid(table, 0x51CC) == 1001u);
  CHECK(listener_uid(table, 0x51CE) == 7u);
  CHECK_FALSE(listener_uid(table, 0x51CD));  // established, not listening
  CHECK_FALSE(listener_uid(table, 80));
  CHECK_FALSE(listener_uid("", 80));
}
