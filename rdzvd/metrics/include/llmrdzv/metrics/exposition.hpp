// Writes the Prometheus text exposition format, version 0.0.4: a HELP and a TYPE line per metric
// family, then its samples, label values and HELP text escaped as the format requires. Metric and
// label names come from the code, never from clients, and are written as given.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrdzv/metrics/histogram.hpp"

namespace llmrdzv::metrics {

// The Content-Type a /metrics answer in this format carries.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string_view, std::string>>;

class Exposition {
 public:
  // type: counter, gauge or histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void sample(std::string_view name, double value) { sample(name, {}, value); }
  // name_bucket{..., le="B"} for each bound and +Inf (cumulative), then name_sum and name_count.
  void histogram(std::string_view name, const Labels& labels, const Histogram& histogram);

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Label values: backslash, double quote and line feed escaped as \\, \" and \n.
std::string escape_label_value(std::string_view value);
// HELP text: backslash and line feed escaped.
std::string escape_help(std::string_view text);
// Whole numbers without exponent or fraction; others in the shortest form that reads back exactly,
// without exponent between 1e-6 and 1e15; +Inf, -Inf, NaN.
std::string format_value(double value);

}  // namespace llmrdzv::metrics
