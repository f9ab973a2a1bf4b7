// rdzvd's log: one line per event to stderr (with a UTC timestamp) or to syslog, filtered by
// level, safe to call from any thread. Callers never pass tokens or secrets.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "llmrdzv/core/core.hpp"

namespace llmrdzv::server {

class Logger {
 public:
  Logger(core::LogLevel level, bool use_syslog);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void set_level(core::LogLevel level) { level_ = level; }
  bool enabled(core::LogLevel level) const { return int(level) <= int(level_.load()); }
  void write(core::LogLevel level, const std::string& message);

  void error(const std::string& m) { write(core::LogLevel::error, m); }
  void warn(const std::string& m) { write(core::LogLevel::warn, m); }
  void info(const std::string& m) { write(core::LogLevel::info, m); }
  void debug(const std::string& m) { write(core::LogLevel::debug, m); }

 private:
  std::atomic<core::LogLevel> level_;
  bool syslog_;
  std::mutex mutex_;
};

}  // namespace llmrdzv::server
