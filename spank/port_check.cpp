// Binds a port the way c10d's TCPStore server does, to see whether rank 0 could (port_check.hpp).
#include "port_check.hpp"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace llmrdzv::spank {
namespace {

// 0 when a listener could be made on the wildcard address, else the errno.
int try_listen(std::uint16_t port) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool v6 = fd >= 0;
  if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int on = 1, off = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(port);
    rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(port);
    rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  if (rc == 0) rc = listen(fd, 1);
  const int error = rc == 0 ? 0 : errno;
  close(fd);
  return error;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string user_name(unsigned uid) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid_t(uid), &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return "?";
  return found->pw_name;
}

}  // namespace

std::optional<unsigned> listener_uid(const std::string& table, std::uint16_t port) {
  constexpr const char* kListen = "0A";
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits;
    unsigned uid = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) continue;
    const auto colon = local.rfind(':');
    if (colon == std::string::npos || state != kListen) continue;
    char* end = nullptr;
    const unsigned long local_port = std::strtoul(local.c_str() + colon + 1, &end, 16);
    if (*end == '\0' && local_port == port) return uid;
  }
  return std::nullopt;
}

std::optional<std::string> port_taken(std::uint16_t port) {
  const int error = try_listen(port);
  if (error == 0) return std::nullopt;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    if (const auto uid = listener_uid(read_file(table), port)) {
      return "a listening socket of uid " + std::to_string(*uid) + " (" + user_name(*uid) + ")";
    }
  }
  return std::string("it cannot be bound: ") + std::strerror(error);
}

}  // namespace llmrdzv::spank
