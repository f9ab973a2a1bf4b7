// Options with a fixed set of values are enums, written and parsed as the names users type. An
// enum takes part by declaring, in its own namespace, `option_names(Enum)`: its names indexed by
// its values (found by argument-dependent lookup). Here, the lowest library that has such enums
// (engine_options.hpp), so the engines, trainer/train's CLI and the tests share one implementation.
// Torch-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace llmrdzv::engine {

// The name users type for `value` ("constant_with_warmup", "auto", ...).
template <class Enum>
  requires std::is_enum_v<Enum>
constexpr std::string_view option_name(Enum value) {
  return option_names(value)[static_cast<std::size_t>(value)];
}

// The value named `name`; nullopt when no value has that name.
template <class Enum>
  requires std::is_enum_v<Enum>
constexpr std::optional<Enum> parse_option_name(std::string_view name) {
  const auto names = option_names(Enum{});
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace llmrdzv::engine
