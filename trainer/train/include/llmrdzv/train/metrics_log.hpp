// metrics.jsonl in the output directory: one JSON object per line (training logs, evaluations,
// the final summary), flushed as written so a crashed run keeps what it logged.
#pragma once

#include <fstream>
#include <string>

#include "llmrdzv/io/json.hpp"

namespace llmrdzv::train {

// A logged number: the value, or null when it is not finite (a diverged loss must still log).
json::Value metric(double value);

class MetricsLog {
 public:
  // Appends to `path` (a resumed run continues the file); throws std::runtime_error if it cannot.
  explicit MetricsLog(const std::string& path);
  void write(const json::Object& record);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace llmrdzv::train
