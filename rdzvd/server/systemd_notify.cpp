// systemd notifications through libsystemd (see systemd_notify.hpp).
#include "systemd_notify.hpp"

#include <systemd/sd-daemon.h>

#include <cstdint>

namespace llmrdzv::server {

SystemdNotifier SystemdNotifier::from_environment() {
  SystemdNotifier notifier;
  std::uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and valid and WATCHDOG_PID, if set, is ours; 1 = unset both.
  if (sd_watchdog_enabled(1, &usec) > 0 && usec >= 2000) {
    notifier.watchdog_period_ = std::chrono::milliseconds(usec / 2000);
  }
  return notifier;
}

bool SystemdNotifier::notify(const std::string& state) const {
  // 0 without $NOTIFY_SOCKET, > 0 once sent, < 0 (a negative errno) when it could not be sent.
  return sd_notify(0, state.c_str()) >= 0;
}

}  // namespace llmrdzv::server
