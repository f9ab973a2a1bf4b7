// stderr / syslog logging for rdzvd (see logger.hpp).
#include "logger.hpp"

#include <syslog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "daemon_options.hpp"

namespace llmrdzv::server {
namespace {

int syslog_priority(core::LogLevel level) {
  switch (level) {
    case core::LogLevel::error: return LOG_ERR;
    case core::LogLevel::warn: return LOG_WARNING;
    case core::LogLevel::info: return LOG_INFO;
    case core::LogLevel::debug: return LOG_DEBUG;
  }
  return LOG_INFO;
}

// Control characters from client-supplied ids must not forge extra log lines.
std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out;
}

}  // namespace

Logger::Logger(core::LogLevel level, bool use_syslog) : level_(level), syslog_(use_syslog) {
  if (syslog_) openlog("rdzvd", LOG_PID, LOG_DAEMON);
}

Logger::~Logger() {
  if (syslog_) closelog();
}

void Logger::write(core::LogLevel level, const std::string& message) {
  if (!enabled(level)) return;
  const std::string line = printable(message);
  if (syslog_) {
    ::syslog(syslog_priority(level), "%s", line.c_str());
    return;
  }
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard lock(mutex_);
  std::fprintf(stderr, "%s.%03dZ rdzvd[%d] %s %s\n", stamp, int(millis), int(getpid()), log_level_name(level),
               line.c_str());
  std::fflush(stderr);
}

}  // namespace llmrdzv::server
