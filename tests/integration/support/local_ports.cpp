// Loopback ports for tests (see local_ports.hpp).
#include "local_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>

namespace llmrdzv::testing {

int listen_on(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

PortRange free_port_range(std::uint16_t size) {
  std::mt19937 random(std::random_device{}());
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto lo = std::uint16_t(std::uniform_int_distribution<int>(20000, 32000)(random));
    bool all_free = true;
    for (std::uint16_t port = lo; port < lo + size && all_free; ++port) {
      const int fd = listen_on(port);
      all_free = fd >= 0;
      if (fd >= 0) close(fd);
    }
    if (all_free) return {lo, std::uint16_t(lo + size - 1)};
  }
  throw std::runtime_error("no range of free ports found");
}

}  // namespace llmrdzv::testing
