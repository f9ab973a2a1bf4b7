// systemd notifications (see systemd_notify.hpp).
#include "systemd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::server {

SystemdNotifier SystemdNotifier::from_environment() {
  SystemdNotifier notifier;
  if (const char* path = std::getenv("NOTIFY_SOCKET"); path && (path[0] == '/' || path[0] == '@')) {
    notifier.socket_path_ = path;
  }
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  const bool ours = pid == nullptr || parse_unsigned(pid, 1, UINT32_MAX) == std::uint64_t(getpid());
  if (const auto interval = usec ? parse_unsigned(usec, 1000, UINT32_MAX * 1000ull) : std::nullopt; interval && ours) {
    notifier.watchdog_period_ = std::chrono::milliseconds(*interval / 2000);
  }
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  return notifier;
}

bool SystemdNotifier::notify(std::string_view state) const {
  if (!enabled()) return true;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  const socklen_t length = socklen_t(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool sent = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&address),
                           length) == ssize_t(state.size());
  close(fd);
  return sent;
}

}  // namespace llmrdzv::server
