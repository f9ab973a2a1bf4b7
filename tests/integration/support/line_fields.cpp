// Implementation of line_fields (see line_fields.hpp).
#include "line_fields.hpp"

#include <sstream>

namespace llmrdzv::testing {

std::map<std::string, std::string> line_fields(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::size_t start = 0;
  while (start < line.size()) {
    if (line.compare(start, 7, "detail=") == 0) {
      fields["detail"] = line.substr(start + 7);
      break;
    }
    auto end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    const std::string field = line.substr(start, end - start);
    const auto equals = field.find('=');
    if (!field.empty()) {
      fields[field.substr(0, equals)] = equals == std::string::npos ? "" : field.substr(equals + 1);
    }
    start = end + 1;
  }
  return fields;
}

}  // namespace llmrdzv::testing
