// The small strict JSON reader (see json_cursor.hpp).
#include "llmrdzv/tokenizer/json_cursor.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "utf8.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr int kMaxDepth = 64;

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void JsonCursor::fail(const std::string& message) const { throw JsonSyntaxError(pos_, message); }

void JsonCursor::skip_whitespace() {
  while (pos_ < text_.size() &&
         (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
    ++pos_;
  }
}

bool JsonCursor::at_end() {
  skip_whitespace();
  return pos_ == text_.size();
}

bool JsonCursor::consume(char c) {
  skip_whitespace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

void JsonCursor::expect(char c) {
  if (!consume(c)) {
    if (pos_ == text_.size()) fail(std::string("expected '") + c + "' but the text ended");
    fail(std::string("expected '") + c + "'");
  }
}

unsigned JsonCursor::read_hex4() {
  if (text_.size() - pos_ < 4) fail("truncated \\u escape");
  unsigned value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = text_[pos_++];
    value <<= 4;
    if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
    else fail("bad hex digit in \\u escape");
  }
  return value;
}

void JsonCursor::append_escape(std::string& out) {
  if (pos_ == text_.size()) fail("string ends inside an escape");
  const char c = text_[pos_++];
  switch (c) {
    case '"': out.push_back('"'); return;
    case '\\': out.push_back('\\'); return;
    case '/': out.push_back('/'); return;
    case 'b': out.push_back('\b'); return;
    case 'f': out.push_back('\f'); return;
    case 'n': out.push_back('\n'); return;
    case 'r': out.push_back('\r'); return;
    case 't': out.push_back('\t'); return;
    case 'u': break;
    default: --pos_; fail(std::string("unknown escape \\") + c);
  }
  char32_t cp = read_hex4();
  if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (text_.substr(pos_, 2) != "\\u") fail("high surrogate not followed by a low surrogate");
    pos_ += 2;
    const char32_t low = read_hex4();
    if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate not followed by a low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(out, cp);
}

std::string JsonCursor::read_string() {
  expect('"');
  std::string out;
  while (true) {
    const std::size_t run_start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\\' &&
           static_cast<unsigned char>(text_[pos_]) >= 0x20) {
      const auto* p = reinterpret_cast<const unsigned char*>(text_.data()) + pos_;
      if (*p < 0x80) {
        ++pos_;
        continue;
      }
      char32_t cp;
      const std::size_t len = decode_utf8(p, text_.size() - pos_, cp);
      if (len == 0) fail("invalid UTF-8 in string");
      pos_ += len;
    }
    out.append(text_.substr(run_start, pos_ - run_start));
    if (pos_ == text_.size()) fail("unterminated string");
    const char c = text_[pos_++];
    if (c == '"') return out;
    if (c == '\\') {
      append_escape(out);
    } else {
      --pos_;
      fail("unescaped control character in string");
    }
  }
}

std::int64_t JsonCursor::read_integer() {
  skip_whitespace();
  const std::size_t start = pos_;
  const bool negative = pos_ < text_.size() && text_[pos_] == '-';
  if (negative) ++pos_;
  if (pos_ == text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("expected an integer");
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
    fail("leading zero in number");
  }
  std::uint64_t magnitude = 0;
  const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
    const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
    if (magnitude > (limit - digit) / 10) {
      pos_ = start;
      fail("integer out of range");
    }
    magnitude = magnitude * 10 + digit;
    ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    pos_ = start;
    fail("expected an integer, found a fraction or exponent");
  }
  if (negative) return magnitude == (std::uint64_t{1} << 63) ? std::numeric_limits<std::int64_t>::min()
                                                               : -static_cast<std::int64_t>(magnitude);
  return static_cast<std::int64_t>(magnitude);
}

void JsonCursor::skip_value() { skip_value(0); }

void JsonCursor::skip_value(int depth) {
  if (depth > kMaxDepth) fail("nesting deeper than 64 levels");
  skip_whitespace();
  if (pos_ == text_.size()) fail("expected a value but the text ended");
  const char c = text_[pos_];
  if (c == '"') {
    read_string();
  } else if (c == '{') {
    ++pos_;
    if (consume('}')) return;
    do {
      read_string();
      expect(':');
      skip_value(depth + 1);
    } while (consume(','));
    expect('}');
  } else if (c == '[') {
    ++pos_;
    if (consume(']')) return;
    do {
      skip_value(depth + 1);
    } while (consume(','));
    expect(']');
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    if (c == '-') ++pos_;
    auto digits = [&] {
      const std::size_t begin = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == begin) fail("malformed number");
      return pos_ - begin;
    };
    const bool leading_zero = pos_ < text_.size() && text_[pos_] == '0';
    if (digits() > 1 && leading_zero) fail("leading zero in number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
  } else {
    for (std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return;
      }
    }
    fail("expected a value");
  }
}

std::size_t line_of_offset(std::string_view text, std::size_t offset) {
  const std::size_t end = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", u);
      out.append(escape);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace llmrdzv::tokenizer
