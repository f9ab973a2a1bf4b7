// A small strict JSON (RFC 8259) value, parser and writer: config.json, the safetensors header and
// checkpoint manifests are all JSON, and the trainer needs nothing bigger than this. The parser
// rejects anything that is not well-formed (trailing commas, comments, bad escapes, invalid UTF-8,
// duplicate keys, nesting deeper than a fixed cap) with an error naming the byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace llmrdzv::json {

class ParseError : public std::runtime_error {
 public:
  ParseError(std::size_t offset, const std::string& what)
      : std::runtime_error("at byte " + std::to_string(offset) + ": " + what), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

class Value;
using Array = std::vector<Value>;
// Members in document order; keys are unique (the parser rejects duplicates).
using Object = std::vector<std::pair<std::string, Value>>;

// A number keeps its integer value when the text was an integer that fits int64.
struct Number {
  double real = 0;
  std::int64_t integer = 0;
  bool is_integer = false;
};

class Value {
 public:
  Value() : data_(nullptr) {}
  Value(std::nullptr_t) : data_(nullptr) {}
  Value(bool b) : data_(b) {}
  Value(int v) : data_(Number{static_cast<double>(v), v, true}) {}
  Value(std::int64_t v) : data_(Number{static_cast<double>(v), v, true}) {}
  Value(double v) : data_(Number{v, 0, false}) {}
  Value(Number n) : data_(n) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(Array a) : data_(std::move(a)) {}
  Value(Object o) : data_(std::move(o)) {}

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_number() const { return std::holds_alternative<Number>(data_); }
  bool is_integer() const { return is_number() && std::get<Number>(data_).is_integer; }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_array() const { return std::holds_alternative<Array>(data_); }
  bool is_object() const { return std::holds_alternative<Object>(data_); }

  // Accessors throw std::runtime_error naming the expected and the actual kind.
  bool as_bool() const;
  const Number& as_number() const;
  std::int64_t as_integer() const;
  double as_double() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  Object& as_object();

  // The member named key, or nullptr when absent (throws when this is not an object).
  const Value* find(std::string_view key) const;

  // "null", "boolean", "number", "string", "array" or "object".
  std::string_view kind_name() const;

 private:
  std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> data_;
};

// Parses exactly one JSON value; surrounding whitespace is allowed, anything else is an error.
Value parse(std::string_view text);

// Serialises compactly (indent < 0) or pretty-printed with `indent` spaces per level.
// Doubles use the shortest text that reads back to the same value; NaN/inf are rejected.
std::string write(const Value& value, int indent = -1);

}  // namespace llmrdzv::json
