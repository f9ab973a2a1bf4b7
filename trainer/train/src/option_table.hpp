// One table of options per subcommand drives flag parsing, YAML keys and --help, so the three
// cannot disagree. A row names the option, points at its field, and says what it does.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "llmrdzv/common/text_values.hpp"

#include "llmrdzv/train/cli.hpp"
#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

// std::optional<bool>: a flag whose default ("auto") is decided at run time (--bf16, --tf32).
// An enum: one of its option_names (option_names.hpp).
template <class Options>
using OptionField = std::variant<std::string Options::*, std::int64_t Options::*, double Options::*,
                                 bool Options::*, std::optional<bool> Options::*, LrSchedulerType Options::*,
                                 SaveStrategy Options::*, EvalStrategy Options::*, Offload Options::*,
                                 OffloadGradientSync Options::*>;

// "A, B or C": the names of an enum's values, for messages.
template <class Enum>
std::string names_list(Enum value) {
  const auto names = option_names(value);
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

template <class Options>
struct OptionSpec {
  std::string_view name;
  OptionField<Options> field;
  std::string_view help;
};

template <class Options>
const OptionSpec<Options>* find_option(std::span<const OptionSpec<Options>> table,
                                       std::string_view name) {
  for (const auto& spec : table) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// The first row of the table that sets the same field as `spec` (`spec` itself, unless it is an
// option's other name).
template <class Options>
const OptionSpec<Options>& find_field(std::span<const OptionSpec<Options>> table, const OptionSpec<Options>& spec) {
  for (const auto& row : table) {
    if (row.field == spec.field) return row;
  }
  return spec;
}

// Parses `text` into the option's field; `origin` says where the text came from ("--seed",
// "cfg.yaml:3: key 'seed'") so the message points at it.
template <class Options>
void set_option(Options& options, const OptionSpec<Options>& spec, std::string_view text,
                const std::string& origin) {
  const auto fail = [&](std::string_view expected) {
    throw UsageError(origin + " expects " + std::string(expected) + ", got '" + std::string(text) + "'");
  };
  std::visit(
      [&](auto member) {
        using Value = std::remove_reference_t<decltype(options.*member)>;
        Value& target = options.*member;
        if constexpr (std::is_same_v<Value, std::string>) {
          target = std::string(text);
        } else if constexpr (std::is_enum_v<Value>) {
          const auto value = parse_option_name<Value>(text);
          if (!value) {
            throw UsageError("--" + std::string(spec.name) + " must be " + names_list(target) + ", got '" +
                             std::string(text) + "'");
          }
          target = *value;
        } else if constexpr (std::is_same_v<Value, bool> || std::is_same_v<Value, std::optional<bool>>) {
          constexpr bool has_auto = std::is_same_v<Value, std::optional<bool>>;
          if (text == "true" || text == "True" || text == "1" || text == "yes") {
            target = true;
          } else if (text == "false" || text == "False" || text == "0" || text == "no") {
            target = false;
          } else if (has_auto && text == "auto") {
            target = Value{};
          } else {
            fail(has_auto ? "true, false or auto" : "true or false");
          }
        } else if constexpr (std::is_same_v<Value, std::int64_t>) {
          const auto value = parse_signed(text, INT64_MIN, INT64_MAX);
          if (!value) fail("an integer");
          target = *value;
        } else {
          double value = 0;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
          if (ec != std::errc() || end != text.data() + text.size() || text.empty() ||
              !std::isfinite(value)) {
            fail("a number");
          }
          target = value;
        }
      },
      spec.field);
}

template <class Options>
bool is_flag(const OptionSpec<Options>& spec) {
  return std::holds_alternative<bool Options::*>(spec.field) ||
         std::holds_alternative<std::optional<bool> Options::*>(spec.field);
}

template <class Options>
bool is_enum(const OptionSpec<Options>& spec) {
  return std::visit([](auto member) { return std::is_enum_v<std::remove_cvref_t<decltype(Options{}.*member)>>; },
                    spec.field);
}

// The field's value in `options` as --help shows it ("auto" for an unset std::optional<bool>,
// "" for an empty string).
template <class Options>
std::string value_text(const Options& options, const OptionSpec<Options>& spec) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& value = options.*member;
        using Value = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, std::string>) {
          return value.empty() ? "\"\"" : value;
        } else if constexpr (std::is_enum_v<Value>) {
          return std::string(option_name(value));
        } else if constexpr (std::is_same_v<Value, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_same_v<Value, std::optional<bool>>) {
          return value ? (*value ? "true" : "false") : "auto";
        } else if constexpr (std::is_same_v<Value, double>) {
          char text[32];
          return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);  // shortest exact form
        } else {
          return std::to_string(value);
        }
      },
      spec.field);
}

// The default shown in --help: the field's value in a default-constructed struct.
template <class Options>
std::string default_text(const OptionSpec<Options>& spec) {
  return value_text(Options{}, spec);
}

// `name: value` lines for every option (see options_yaml in cli.hpp), under its first name only
// (a later row for the same field is an old name of it). Strings are YAML double-quoted scalars,
// so any text reads back as itself; enum names are quoted the same way.
template <class Options>
std::string values_yaml(std::span<const OptionSpec<Options>> table, const Options& options) {
  std::string text;
  for (const auto& spec : table) {
    if (&find_field(table, spec) != &spec) continue;
    const auto* string_field = std::get_if<std::string Options::*>(&spec.field);
    const auto* auto_field = std::get_if<std::optional<bool> Options::*>(&spec.field);
    if (auto_field && !(options.**auto_field)) {
      text += "# " + std::string(spec.name) + ": auto\n";
    } else if (string_field || is_enum(spec)) {
      text += std::string(spec.name) + ": \"";
      for (const char c : string_field ? options.**string_field : value_text(options, spec)) {
        if (c == '"' || c == '\\') {
          text += '\\';
          text += c;
        } else if (c == '\n') {
          text += "\\n";
        } else {
          text += c;
        }
      }
      text += "\"\n";
    } else {
      text += std::string(spec.name) + ": " + value_text(options, spec) + "\n";
    }
  }
  return text;
}

template <class Options>
std::string help_text(std::string_view usage, std::span<const OptionSpec<Options>> table) {
  std::string text(usage);
  text += "\nOptions (also accepted as keys of the --config YAML file; flags override it):\n";
  text += "  --config FILE\n      YAML file with any of the options below\n";
  for (const auto& spec : table) {
    text += "  --" + std::string(spec.name);
    text += !is_flag(spec)                                                             ? " VALUE"
            : std::holds_alternative<std::optional<bool> Options::*>(spec.field) ? "[=true|false|auto]"
                                                                                 : "[=true|false]";
    text += "  (default: " + default_text(spec) + ")\n      " + std::string(spec.help) + "\n";
  }
  text += "  -h, --help\n      show this help and exit\n";
  return text;
}

}  // namespace llmrdzv::train
