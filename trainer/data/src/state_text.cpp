// Parsing of the samplers' checkpoint position records (see state_text.hpp).
#include "state_text.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include "llmrdzv/data/corpus.hpp"

namespace llmrdzv::data {

std::map<std::string, std::uint64_t, std::less<>> parse_state_text(std::string_view text, std::string_view format,
                                                                   std::initializer_list<std::string_view> keys,
                                                                   std::string_view what) {
  const auto fail = [&](const std::string& problem) -> DataError {
    return DataError(std::string(what) + " state '" + std::string(text) + "' is malformed: " + problem);
  };
  if (text.substr(0, format.size()) != format || (text.size() > format.size() && text[format.size()] != ' ')) {
    throw fail("it does not start with '" + std::string(format) + "'");
  }
  std::map<std::string, std::uint64_t, std::less<>> values;
  std::string_view rest = text.substr(format.size());
  while (!rest.empty()) {
    if (rest.front() != ' ') throw fail("fields must be separated by single spaces");
    rest.remove_prefix(1);
    const std::string_view field = rest.substr(0, rest.find(' '));
    rest.remove_prefix(field.size());
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) throw fail("field '" + std::string(field) + "' is not key=value");
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = field.substr(eq + 1);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) throw fail("unknown key '" + std::string(key) + "'");
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
      throw fail("'" + std::string(key) + "' is not an unsigned integer");
    }
    if (!values.emplace(std::string(key), number).second) throw fail("'" + std::string(key) + "' appears twice");
  }
  for (const std::string_view key : keys) {
    if (!values.contains(key)) throw fail("'" + std::string(key) + "' is missing");
  }
  return values;
}

}  // namespace llmrdzv::data
