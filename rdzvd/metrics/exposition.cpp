// The text exposition format's writer and escaping (see exposition.hpp).
#include "llmrdzv/metrics/exposition.hpp"

#include <charconv>
#include <cmath>

namespace llmrdzv::metrics {
namespace {

std::string escaped(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quotes) out += "\\\"";
    else out += c;
  }
  return out;
}

void append_labels(std::string& text, const Labels& labels) {
  if (labels.empty()) return;
  text += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) text += ',';
    text += labels[i].first;
    text += "=\"";
    text += escape_label_value(labels[i].second);
    text += '"';
  }
  text += '}';
}

}  // namespace

std::string escape_label_value(std::string_view value) { return escaped(value, true); }

std::string escape_help(std::string_view text) { return escaped(text, false); }

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const double magnitude = std::fabs(value);
  const bool whole = value == std::floor(value) && magnitude < 1e15;
  // Plain decimals in the range a page shows (seconds, bytes, Unix times), exponents beyond it.
  const auto format = magnitude >= 1e-6 && magnitude < 1e15 ? std::chars_format::fixed : std::chars_format::scientific;
  const auto [end, ec] = whole ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(value))
                               : std::to_chars(buffer, buffer + sizeof buffer, value, format);
  return ec == std::errc() ? std::string(buffer, end) : "NaN";
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += escape_help(help);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void Exposition::sample(std::string_view name, const Labels& labels, double value) {
  text_ += name;
  append_labels(text_, labels);
  text_ += ' ';
  text_ += format_value(value);
  text_ += '\n';
}

void Exposition::histogram(std::string_view name, const Labels& labels, const Histogram& histogram) {
  const std::string bucket = std::string(name) + "_bucket";
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  for (std::size_t i = 0; i < histogram.upper_bounds().size(); ++i) {
    with_le.back().second = format_value(histogram.upper_bounds()[i]);
    sample(bucket, with_le, double(histogram.cumulative(i)));
  }
  with_le.back().second = "+Inf";
  sample(bucket, with_le, double(histogram.count()));
  sample(std::string(name) + "_sum", labels, histogram.sum());
  sample(std::string(name) + "_count", labels, double(histogram.count()));
}

}  // namespace llmrdzv::metrics
