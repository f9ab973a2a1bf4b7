// The strict JSON reader/writer: round trips, the values config.json and safetensors headers use,
// and rejection of every kind of malformed input with its byte offset.
#include <catch2/catch.hpp>

#include "llmrdzv/io/json.hpp"

using namespace llmrdzv;

TEST_CASE("json parses the value kinds and keeps member order", "[json]") {
  const json::Value v = json::parse(R"( {"b": [1, -2.5e3, true, null], "a": "x\u00e9\ud83d\ude00\n", "n": 9007199254740993} )");
  const json::Object& o = v.as_object();
  REQUIRE(o.size() == 3);
  CHECK(o[0].first == "b");
  CHECK(o[1].first == "a");
  const json::Array& arr = v.find("b")->as_array();
  CHECK(arr[0].as_integer() == 1);
  CHECK(arr[1].as_double() == -2500.0);
  CHECK_FALSE(arr[1].is_integer());
  CHECK(arr[2].as_bool());
  CHECK(arr[3].is_null());
  CHECK(v.find("a")->as_string() == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  CHECK(v.find("n")->as_integer() == 9007199254740993LL);  // exact beyond double precision
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json write then parse gives the same document", "[json]") {
  const json::Value v(json::Object{{"eps", json::Value(1e-5)},
                                   {"one", json::Value(1.0)},
                                   {"big", json::Value(std::int64_t{1} << 60)},
                                   {"s", json::Value(std::string("q\"\\\t\x01/"))},
                                   {"list", json::Value(json::Array{json::Value(true), json::Value(nullptr)})},
                                   {"empty", json::Value(json::Object{})}});
  for (int indent : {-1, 2}) {
    const std::string text = json::write(v, indent);
    const json::Value back = json::parse(text);
    CHECK(back.find("eps")->as_double() == 1e-5);
    CHECK_FALSE(back.find("one")->is_integer());  // written as 1.0, read back as a real
    CHECK(back.find("big")->as_integer() == (std::int64_t{1} << 60));
    CHECK(back.find("s")->as_string() == "q\"\\\t\x01/");
    CHECK(back.find("list")->as_array().size() == 2);
    CHECK(back.find("empty")->as_object().empty());
    CHECK(json::write(back, indent) == text);
  }
  CHECK(json::write(v) .find('\n') == std::string::npos);
}

TEST_CASE("json rejects malformed input with the offset", "[json]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "unexpected end of input"},
      {"{\"a\": 1,}", "expected a string key"},
      {"[1, 2,]", "unexpected character ']'"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\""},
      {"[01]", "expected ']'"},
      {"1.", "digit expected after '.'"},
      {"\"abc", "unterminated string"},
      {"\"a\\x\"", "invalid escape"},
      {"\"\\ud800\"", "high surrogate without a low surrogate"},
      {"\"\xff\"", "invalid UTF-8"},
      {"\"\xc0\xaf\"", "invalid UTF-8"},
      {"\"a\nb\"", "unescaped control character"},
      {"tru", "invalid literal"},
      {"{} x", "trailing characters"},
      {"// comment\n{}", "unexpected character '/'"},
      {"1e999", "out of range"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(json::parse(c.text), Catch::Contains(c.message));
  }
  CHECK_THROWS_WITH(json::parse("[[[[1]]]]  x"), Catch::StartsWith("at byte 11:"));
}

TEST_CASE("json caps nesting depth instead of overflowing the stack", "[json]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(json::parse(deep), Catch::Contains("nesting deeper than"));
  const std::string ok = std::string(100, '[') + std::string(100, ']');
  CHECK(json::parse(ok).is_array());
}

TEST_CASE("json accessors name the expected and actual kinds", "[json]") {
  const json::Value v = json::parse(R"({"a": "text"})");
  CHECK_THROWS_WITH(v.find("a")->as_integer(), "expected an integer, got string");
  CHECK_THROWS_WITH(v.as_array(), "expected an array, got object");
  CHECK_THROWS_WITH(json::write(json::Value(std::nan(""))), Catch::Contains("NaN"));
}
