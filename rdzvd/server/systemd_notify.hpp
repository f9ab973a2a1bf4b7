// systemd's service notification protocol, for rdzvd.service (Type=notify, WatchdogSec=), through
// libsystemd's sd_notify and sd_watchdog_enabled: READY=1 once rdzvd listens, RELOADING=1 / READY=1
// around a SIGHUP reload, STOPPING=1 at shutdown, WATCHDOG=1 at half the interval $WATCHDOG_USEC
// asks for. Without $NOTIFY_SOCKET (step mode, a shell) every call does nothing.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace llmrdzv::server {

class SystemdNotifier {
 public:
  // Reads WATCHDOG_USEC and WATCHDOG_PID (the watchdog is ours only when the pid is this
  // process's or absent) and unsets both. NOTIFY_SOCKET stays set: sd_notify reads it at each
  // call, and rdzvd starts no child that could inherit it.
  static SystemdNotifier from_environment();

  // Sends `state` ("READY=1\nSTATUS=..."); false when it could not be sent (logged by the caller).
  // Sends nothing, and returns true, without $NOTIFY_SOCKET.
  bool notify(const std::string& state) const;
  // How often to send WATCHDOG=1 (half of WATCHDOG_USEC), if systemd runs a watchdog for us.
  std::optional<std::chrono::milliseconds> watchdog_period() const { return watchdog_period_; }

 private:
  std::optional<std::chrono::milliseconds> watchdog_period_;
};

}  // namespace llmrdzv::server
