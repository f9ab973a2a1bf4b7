// JSON serialisation: compact or indented, shortest round-trip doubles, escaped strings.
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "llmrdzv/io/json.hpp"

namespace llmrdzv::json {
namespace {

void write_string(std::string& out, const std::string& s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write_number(std::string& out, const Number& n) {
  char buf[32];
  std::to_chars_result r;
  if (n.is_integer) {
    r = std::to_chars(buf, buf + sizeof buf, n.integer);
  } else {
    if (!std::isfinite(n.real)) throw std::invalid_argument("JSON cannot represent NaN or infinity");
    r = std::to_chars(buf, buf + sizeof buf, n.real);
  }
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  out += text;
  // Keep doubles recognisably real numbers ("1.0", not "1"), as Python's json writes them.
  if (!n.is_integer && text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<std::size_t>(indent * depth), ' ');
}

void write_value(std::string& out, const Value& v, int indent, int depth) {
  if (v.is_null()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_number()) {
    write_number(out, v.as_number());
  } else if (v.is_string()) {
    write_string(out, v.as_string());
  } else if (v.is_array()) {
    const Array& items = v.as_array();
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out += ',';
      newline(out, indent, depth + 1);
      write_value(out, items[i], indent, depth + 1);
    }
    if (!items.empty()) newline(out, indent, depth);
    out += ']';
  } else {
    const Object& members = v.as_object();
    out += '{';
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i) out += ',';
      newline(out, indent, depth + 1);
      write_string(out, members[i].first);
      out += indent < 0 ? ":" : ": ";
      write_value(out, members[i].second, indent, depth + 1);
    }
    if (!members.empty()) newline(out, indent, depth);
    out += '}';
  }
}

}  // namespace

std::string write(const Value& value, int indent) {
  std::string out;
  write_value(out, value, indent, 0);
  return out;
}

}  // namespace llmrdzv::json
