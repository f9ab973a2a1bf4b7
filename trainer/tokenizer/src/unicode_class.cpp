// Code point classification from the generated table (gen_unicode_tables.py), with an ASCII
// fast path since most text is ASCII.
#include "unicode_class.hpp"

#include <algorithm>
#include <array>

namespace llmrdzv::tokenizer {
namespace {

#include "unicode_tables.inc"

constexpr std::array<CodePointClass, 128> make_ascii_table() {
  std::array<CodePointClass, 128> table{};
  for (const CodePointRange& range : kUnicodeTable) {
    for (std::uint32_t cp = range.first; cp <= range.last && cp < 128; ++cp) table[cp] = range.cls;
  }
  return table;
}

constexpr std::array<CodePointClass, 128> kAscii = make_ascii_table();

}  // namespace

CodePointClass classify(char32_t cp) {
  if (cp < 128) return kAscii[cp];
  const CodePointRange* end = kUnicodeTable + kUnicodeTableCount;
  const CodePointRange* it =
      std::upper_bound(kUnicodeTable, end, static_cast<std::uint32_t>(cp),
                       [](std::uint32_t value, const CodePointRange& range) { return value < range.first; });
  if (it == kUnicodeTable) return CodePointClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CodePointClass::kOther;
}

}  // namespace llmrdzv::tokenizer
