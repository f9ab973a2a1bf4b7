// JSON lines for metrics_log.hpp, written with the project's JSON writer (llmrdzv::io_core).
#include "llmrdzv/train/metrics_log.hpp"

#include <cmath>
#include <stdexcept>

namespace llmrdzv::train {

json::Value metric(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot open metrics file '" + path + "' for writing");
}

void MetricsLog::write(const json::Object& record) {
  out_ << json::write(record) << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write metrics file '" + path_ + "'");
}

}  // namespace llmrdzv::train
