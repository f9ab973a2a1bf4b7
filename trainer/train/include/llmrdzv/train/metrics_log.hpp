// metrics.jsonl in the output directory: one JSON object per line (training logs, evaluations,
// the final summary), flushed as written so a crashed run keeps what it logged.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "llmrdzv/io/json.hpp"

namespace llmrdzv::train {

// A logged number: the value, or null when it is not finite (a diverged loss must still log).
json::Value metric(double value);

class MetricsLog {
 public:
  // Appends to `path`; throws std::runtime_error if it cannot. A run resumed at `resumed_step`
  // continues the file from there: the file is first cut before its first record past that step
  // (the earlier run's later steps, which this run will log again) or its first line that is not
  // a JSON object (a record torn by a crash).
  explicit MetricsLog(const std::string& path, std::optional<std::int64_t> resumed_step = std::nullopt);
  void write(const json::Object& record);
  // How many lines the resume cut off.
  std::size_t removed_lines() const { return removed_lines_; }

 private:
  std::string path_;
  std::size_t removed_lines_ = 0;
  std::ofstream out_;
};

}  // namespace llmrdzv::train
