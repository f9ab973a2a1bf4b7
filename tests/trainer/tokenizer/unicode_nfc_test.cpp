// The tokenizer's NFC (Qwen2's normalizer) against Python's unicodedata: every code point from
// U+00C0 on followed by marks that reorder and compose, and random mixes of bases, marks of every
// class, Hangul jamo, singletons and exclusions; invalid UTF-8 kept as it is.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmrdzv/io/utf8.hpp"
#include "scratch_dir.hpp"
#include "unicode_nfc.hpp"

using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::is_nfc_quick;
using llmrdzv::tokenizer::nfc;

namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string unhex(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

std::string utf8_of(std::initializer_list<char32_t> cps) {
  std::string out;
  for (const char32_t cp : cps) llmrdzv::utf8::append(out, cp);
  return out;
}

std::vector<std::string> python_nfc(const ScratchDir& scratch, const std::vector<std::string>& cases) {
  {
    std::ofstream out(scratch.file("cases.txt"));
    for (const std::string& c : cases) out << hex(c) << "\n";
  }
  const std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_NFC_ORACLE + " " + scratch.file("cases.txt") + " " +
                              scratch.file("nfc.txt");
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(scratch.file("nfc.txt"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(unhex(line));
  return out;
}

}  // namespace

TEST_CASE("NFC equals Python's unicodedata on every code point and on mixes of marks", "[tokenizer][nfc][python]") {
  ScratchDir scratch("tok-nfc");
  std::vector<std::string> cases;
  for (char32_t cp = 0xC0; cp < 0x30000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    cases.push_back(utf8_of({cp, 0x0323, 0x0301}));  // a mark of class 220 after one of 230: reordered
  }
  const char32_t pool[] = {0x41,   0x61,   0x65,   0x20,   0xC0,   0xE9,   0x300,  0x301,  0x302,  0x308,  0x323,  0x327,
                           0x328,  0x31B,  0x345,  0x344,  0x340,  0x343,  0x0F71, 0x0F72, 0x0F73, 0x1100, 0x1161, 0x11A8,
                           0xAC00, 0xAC01, 0x212B, 0x2126, 0xF900, 0x1E0A, 0x3B1,  0x342,  0x313,  0x5D0,  0x5B4,  0x5BC,
                           0x915,  0x93C,  0x9C7,  0x9BE,  0x9D7,  0xB47,  0xB3E,  0xB56,  0xCC6,  0xCC2,  0xCD5,  0xD46,
                           0xD3E,  0x1025, 0x102E, 0x4E00, 0x1F600, 0x200D, 0x627, 0x653,  0x654,  0x3099, 0x304B, 0x309A,
                           0x110B1, 0x110BA, 0x1D15E, 0x1D165, 0x1FB3, 0x1FBE, 0x0338, 0x3D, 0x3C};
  std::mt19937 random(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const int length = 1 + static_cast<int>(random() % 8);
    for (int j = 0; j < length; ++j) llmrdzv::utf8::append(text, pool[random() % std::size(pool)]);
    cases.push_back(text);
  }
  const std::vector<std::string> expected = python_nfc(scratch, cases);
  REQUIRE(expected.size() == cases.size());
  std::size_t same = 0, quick_wrong = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string ours = nfc(cases[i]);
    if (ours == expected[i]) ++same;
    else if (same + 5 > i) FAIL_CHECK("case " << i << " " << hex(cases[i]) << ": " << hex(ours) << " != " << hex(expected[i]));
    if (is_nfc_quick(cases[i]) && expected[i] != cases[i]) ++quick_wrong;
  }
  CHECK(same == cases.size());
  CHECK(quick_wrong == 0);
}

TEST_CASE("NFC keeps invalid UTF-8 and normalizes the text on either side of it", "[tokenizer][nfc]") {
  CHECK(nfc("cafe\xCC\x81") == "caf\xC3\xA9");
  CHECK(nfc("e\xFF\xCC\x81") == "e\xFF\xCC\x81");  // the mark after the invalid byte has no base
  CHECK(nfc("e\xCC\x81\xFF" "a\xCC\x8A") == "\xC3\xA9\xFF\xC3\xA5");
  CHECK(nfc("plain ASCII") == "plain ASCII");
  CHECK(is_nfc_quick("\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80"));  // CJK and emoji need no work
  CHECK_FALSE(is_nfc_quick("e\xCC\x81"));
}
