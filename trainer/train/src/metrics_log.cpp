// JSON lines for metrics_log.hpp.
#include "llmrdzv/train/metrics_log.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace llmrdzv::train {
namespace {

void append_escaped(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
          out += code;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

void JsonObject::key(std::string_view name) {
  if (!body_.empty()) body_ += ',';
  append_escaped(body_, name);
  body_ += ':';
}

JsonObject& JsonObject::add(std::string_view name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    body_ += text;
  }
  return *this;
}

JsonObject& JsonObject::add(std::string_view name, std::int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::add(std::string_view name, std::string_view value) {
  key(name);
  append_escaped(body_, value);
  return *this;
}

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot open metrics file '" + path + "' for writing");
}

void MetricsLog::write(const JsonObject& record) {
  out_ << record.str() << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write metrics file '" + path_ + "'");
}

}  // namespace llmrdzv::train
