// A small strict JSON reader for the two JSON inputs of tokenizer and data: vocab.json (one big
// object of string -> integer) and .jsonl corpus lines (objects whose "text" string is wanted).
// It reads strings (all escapes, surrogate pairs, UTF-8 checked), integers, and skips any other
// value without building a tree. Errors carry the byte offset; callers turn it into file:line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace llmrdzv::tokenizer {

class JsonSyntaxError : public std::runtime_error {
 public:
  JsonSyntaxError(std::size_t offset, const std::string& message)
      : std::runtime_error(message), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : text_(text) {}

  void skip_whitespace();
  bool at_end();  // only whitespace left
  // After whitespace: consumes c and returns true when it is next.
  bool consume(char c);
  void expect(char c);
  std::string read_string();
  std::int64_t read_integer();  // a JSON number that is an integer fitting int64
  void skip_value();
  std::size_t offset() const { return pos_; }
  [[noreturn]] void fail(const std::string& message) const;

 private:
  void skip_value(int depth);
  void append_escape(std::string& out);
  unsigned read_hex4();

  std::string_view text_;
  std::size_t pos_ = 0;
};

// 1-based line of a byte offset in text.
std::size_t line_of_offset(std::string_view text, std::size_t offset);

// Appends s as a JSON string literal (quotes, escapes for '"', '\\' and control characters;
// other UTF-8 as is).
void append_json_string(std::string& out, std::string_view s);

}  // namespace llmrdzv::tokenizer
