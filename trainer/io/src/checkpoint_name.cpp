// checkpoint-<step> directory names, written and read (see checkpoint_name.hpp).
#include "llmrdzv/io/checkpoint_name.hpp"

#include <algorithm>
#include <charconv>

namespace llmrdzv::io {
namespace {

constexpr std::string_view kPrefix = "checkpoint-";

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string checkpoint_dir_name(std::int64_t step) { return std::string(kPrefix) + std::to_string(step); }

std::optional<std::int64_t> parse_checkpoint_step(std::string_view dir_name) {
  if (!dir_name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view digits = dir_name.substr(kPrefix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_ascii_digit)) return std::nullopt;
  std::int64_t step = 0;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), step).ec != std::errc()) return std::nullopt;  // > int64
  return step;
}

}  // namespace llmrdzv::io
