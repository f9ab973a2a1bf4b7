// Whitespace runs beside a position (whitespace_run.hpp).
#include "whitespace_run.hpp"

#include "llmrdzv/io/utf8.hpp"
#include "unicode_class.hpp"

namespace llmrdzv::tokenizer {
namespace {

const unsigned char* bytes_of(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

// The length of the whitespace character ending at `end` (after `floor`), or 0.
std::size_t space_before(std::string_view text, std::size_t end, std::size_t floor) {
  for (std::size_t length = 1; length <= 4 && end - floor >= length; ++length) {
    char32_t cp = 0;
    if (utf8::decode(bytes_of(text) + end - length, length, cp) == length) {
      return classify(cp) == CodePointClass::kSpace ? length : 0;
    }
  }
  return 0;
}

}  // namespace

std::size_t whitespace_run_start(std::string_view text, std::size_t end, std::size_t floor) {
  while (end > floor) {
    const std::size_t length = space_before(text, end, floor);
    if (length == 0) break;
    end -= length;
  }
  return end;
}

std::size_t whitespace_run_end(std::string_view text, std::size_t begin) {
  while (begin < text.size()) {
    char32_t cp = 0;
    const std::size_t length = utf8::decode(bytes_of(text) + begin, text.size() - begin, cp);
    if (length == 0 || classify(cp) != CodePointClass::kSpace) break;
    begin += length;
  }
  return begin;
}

}  // namespace llmrdzv::tokenizer
