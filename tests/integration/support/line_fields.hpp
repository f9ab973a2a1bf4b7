// Parsing the "key=value key=value ..." lines rdzv-test-client and rdzvctl print.
#pragma once

#include <map>
#include <string>

namespace llmrdzv::testing {

// Splits on spaces; a field without '=' is stored with an empty value. The value of "detail"
// runs to the end of the line (details contain spaces).
std::map<std::string, std::string> line_fields(const std::string& line);

}  // namespace llmrdzv::testing
