// The one-line position records that samplers put into checkpoints: "<format> k=v k=v ...", with
// every key required, unsigned integer values, and nothing else allowed. Shared by BlockSampler
// and StreamingBlocks so both reject malformed records the same way.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace llmrdzv::data {

// Parses `text`; throws DataError naming `what` and the problem when the format differs, a key is
// missing, unknown or repeated, or a value is not an unsigned integer.
std::map<std::string, std::uint64_t, std::less<>> parse_state_text(std::string_view text, std::string_view format,
                                                                   std::initializer_list<std::string_view> keys,
                                                                   std::string_view what);

}  // namespace llmrdzv::data
