// Strict recursive-descent JSON parser (RFC 8259) with a nesting cap, UTF-8 validation and
// duplicate-key rejection; errors carry the byte offset.
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "llmrdzv/io/json.hpp"

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
    std::unordered_set<std::string> seen;
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
      if (!seen.insert(key).second) throw ParseError(key_pos, "duplicate key \"" + key + "\"");
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
      return Value(std::move(members));
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

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Copies one UTF-8 encoded code point starting at pos_, rejecting malformed sequences.
  void copy_utf8_sequence(std::string& out) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text_[i]); };
    unsigned char lead = byte(pos_);
    std::size_t len;
    unsigned cp;
    if (lead >= 0xC2 && lead <= 0xDF) { len = 2; cp = lead & 0x1F; }
    else if (lead >= 0xE0 && lead <= 0xEF) { len = 3; cp = lead & 0x0F; }
    else if (lead >= 0xF0 && lead <= 0xF4) { len = 4; cp = lead & 0x07; }
    else fail("invalid UTF-8 in string");
    if (pos_ + len > text_.size()) fail("truncated UTF-8 sequence in string");
    for (std::size_t i = 1; i < len; ++i) {
      unsigned char c = byte(pos_ + i);
      if ((c & 0xC0) != 0x80) fail("invalid UTF-8 in string");
      cp = (cp << 6) | (c & 0x3F);
    }
    bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8 in string");
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
          append_utf8(out, cp);
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
