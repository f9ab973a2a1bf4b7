// metrics.jsonl in the output directory: one JSON object per line (training logs, evaluations,
// the final summary), flushed as written so a crashed run keeps what it logged.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace llmrdzv::train {

// A flat JSON object built field by field. Doubles keep full precision (17 significant digits),
// so logged losses compare exactly; non-finite numbers become null.
class JsonObject {
 public:
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, std::string_view value);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(std::string_view name);
  std::string body_;
};

class MetricsLog {
 public:
  // Appends to `path` (a resumed run continues the file); throws std::runtime_error if it cannot.
  explicit MetricsLog(const std::string& path);
  void write(const JsonObject& record);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace llmrdzv::train
