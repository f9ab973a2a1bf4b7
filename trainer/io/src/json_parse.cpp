// Strict recursive-descent JSON parser (RFC 8259) with a nesting cap, UTF-8 validation and
// duplicate-key rejection; errors carry the byte offset.
#include <charconv>
#include <cmath>
#include <algorithm>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/utf8.hpp"

namespace llmrdzv::json {
namespace {

constexpr int kMaxDepth = 128;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value parse_document() {
    skip_ws();
    Value v = parse_value(0);
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ParseError(pos_, what); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  void expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("invalid literal (expected " + std::string(word) + ")");
    pos_ += word.size();
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (at_end()) fail("unexpected end of input");
    switch (peek()) {
      case '{': return parse_object(depth);
      case '[': return parse_array(depth);
      case '"': return Value(parse_string());
      case 't': expect_word("true"); return Value(true);
      case 'f': expect_word("false"); return Value(false);
      case 'n': expect_word("null"); return Value(nullptr);
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return Value(parse_number());
        fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  Value parse_object(int depth) {
    expect('{');
    Object members;
    std::vector<std::size_t> key_positions;  // for the duplicate-key error
    skip_ws();
    if (peek() == '}' && !at_end()) {
      ++pos_;
      return Value(std::move(members));
    }
    while (true) {
      skip_ws();
      if (peek() != '"' || at_end()) fail("expected a string key");
      std::size_t key_pos = pos_;
      std::string key = parse_string();
      key_positions.push_back(key_pos);
      skip_ws();
      expect(':');
      skip_ws();
      Value v = parse_value(depth + 1);
      members.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (peek() == ',' && !at_end()) {
        ++pos_;
        continue;
      }
      expect('}');
      reject_duplicate_keys(members, key_positions);
      return Value(std::move(members));
    }
  }

  // Once the object is complete (its keys no longer move): sorting views of the keys finds any
  // key given twice without copying them (a 128k-entry vocabulary takes ~10 ms).
  static void reject_duplicate_keys(const Object& members, const std::vector<std::size_t>& key_positions) {
    std::vector<std::size_t> order(members.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto key = [&](std::size_t i) -> std::string_view { return members[i].first; };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b) || (key(a) == key(b) && a < b); });
    for (std::size_t i = 1; i < order.size(); ++i) {
      if (key(order[i]) == key(order[i - 1])) {
        throw ParseError(key_positions[order[i]], "duplicate key \"" + members[order[i]].first + "\"");
      }
    }
  }

  Value parse_array(int depth) {
    expect('[');
    Array items;
    skip_ws();
    if (peek() == ']' && !at_end()) {
      ++pos_;
      return Value(std::move(items));
    }
    while (true) {
      skip_ws();
      items.push_back(parse_value(depth + 1));
      skip_ws();
      if (peek() == ',' && !at_end()) {
        ++pos_;
        continue;
      }
      expect(']');
      return Value(std::move(items));
    }
  }

  Number parse_number() {
    std::size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("invalid number");
    }
    if (peek() == '.' && !at_end()) {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9') || at_end()) fail("invalid number: digit expected after '.'");
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    }
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9') || at_end()) fail("invalid number: digit expected in exponent");
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    }
    std::string_view token = text_.substr(start, pos_ - start);
    Number n;
    auto [end_real, ec_real] = std::from_chars(token.data(), token.data() + token.size(), n.real);
    if (ec_real == std::errc::result_out_of_range || !std::isfinite(n.real)) {
      throw ParseError(start, "number out of range: " + std::string(token));
    }
    if (integral) {
      auto [end_int, ec_int] = std::from_chars(token.data(), token.data() + token.size(), n.integer);
      n.is_integer = ec_int == std::errc() && end_int == token.data() + token.size();
    }
    return n;
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return value;
  }

  // Copies one UTF-8 encoded code point starting at pos_, rejecting malformed sequences.
  void copy_utf8_sequence(std::string& out) {
    char32_t cp = 0;
    const std::size_t len = utf8::decode(reinterpret_cast<const unsigned char*>(text_.data()) + pos_, text_.size() - pos_, cp);
    if (len == 0) fail("invalid UTF-8 in string");
    out.append(text_.substr(pos_, len));
    pos_ += len;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("unescaped control character in string");
      if (c != '\\' && static_cast<unsigned char>(c) < 0x80) {  // a run of plain ASCII, appended at once
        std::size_t end = pos_ + 1;
        while (end < text_.size()) {
          const auto b = static_cast<unsigned char>(text_[end]);
          if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') break;
          ++end;
        }
        out.append(text_.substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      if (static_cast<unsigned char>(c) >= 0x80) {
        copy_utf8_sequence(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = parse_hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without a low surrogate");
            pos_ += 2;
            unsigned low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("invalid low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          utf8::append(out, cp);
          break;
        }
        default: fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Value parse(std::string_view text) { return Parser(text).parse_document(); }

}  // namespace llmrdzv::json
