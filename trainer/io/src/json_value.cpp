// Typed accessors of json::Value: a wrong kind is an error naming what was expected.
#include <stdexcept>

#include "llmrdzv/io/json.hpp"

namespace llmrdzv::json {
namespace {

[[noreturn]] void wrong_kind(std::string_view expected, const Value& v) {
  throw std::runtime_error("expected " + std::string(expected) + ", got " + std::string(v.kind_name()));
}

}  // namespace

std::string_view Value::kind_name() const {
  static constexpr std::string_view names[] = {"null", "boolean", "number", "string", "array", "object"};
  return names[data_.index()];
}

bool Value::as_bool() const {
  if (!is_bool()) wrong_kind("a boolean", *this);
  return std::get<bool>(data_);
}

const Number& Value::as_number() const {
  if (!is_number()) wrong_kind("a number", *this);
  return std::get<Number>(data_);
}

std::int64_t Value::as_integer() const {
  if (!is_integer()) wrong_kind("an integer", *this);
  return std::get<Number>(data_).integer;
}

double Value::as_double() const { return as_number().real; }

const std::string& Value::as_string() const {
  if (!is_string()) wrong_kind("a string", *this);
  return std::get<std::string>(data_);
}

const Array& Value::as_array() const {
  if (!is_array()) wrong_kind("an array", *this);
  return std::get<Array>(data_);
}

const Object& Value::as_object() const {
  if (!is_object()) wrong_kind("an object", *this);
  return std::get<Object>(data_);
}

Object& Value::as_object() {
  if (!is_object()) wrong_kind("an object", *this);
  return std::get<Object>(data_);
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : as_object()) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace llmrdzv::json
