// systemd's service notification protocol, for rdzvd.service (Type=notify, WatchdogSec=): one
// datagram of "KEY=VALUE" lines to the AF_UNIX socket in $NOTIFY_SOCKET (a leading '@' names an
// abstract socket). READY=1 once rdzvd listens, RELOADING=1 / READY=1 around a SIGHUP reload,
// STOPPING=1 at shutdown, WATCHDOG=1 at half the interval $WATCHDOG_USEC asks for. Written here
// (about forty lines) rather than linking libsystemd for one sendmsg; without $NOTIFY_SOCKET
// (step mode, a shell) every call does nothing.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace llmrdzv::server {

class SystemdNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (the watchdog is ours only when the pid
  // is this process's or absent), then unsets all three so that no child inherits them.
  static SystemdNotifier from_environment();

  bool enabled() const { return !socket_path_.empty(); }
  // Sends `state` ("READY=1\nSTATUS=..."); false when it could not be sent (logged by the caller).
  bool notify(std::string_view state) const;
  // How often to send WATCHDOG=1 (half of WATCHDOG_USEC), if systemd runs a watchdog for us.
  std::optional<std::chrono::milliseconds> watchdog_period() const { return watchdog_period_; }

 private:
  std::string socket_path_;
  std::optional<std::chrono::milliseconds> watchdog_period_;
};

}  // namespace llmrdzv::server
