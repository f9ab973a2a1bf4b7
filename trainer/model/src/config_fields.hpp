// One table of config.json keys per model family, and the three things done with it: read a key
// from config.json (checking its JSON type), write it back, and set it from run_clm.py's
// --config_overrides text. Every family's config goes through these, so reading, writing and
// overriding cannot disagree about a key's name or type.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/model/model_config.hpp"

namespace llmrdzv::model::detail {

template <typename Config>
struct ConfigKey {
  using Field = std::variant<std::int64_t Config::*, std::optional<std::int64_t> Config::*, double Config::*,
                             std::optional<double> Config::*, bool Config::*, std::string Config::*, TokenIds Config::*>;
  std::string_view name;
  Field field;
};

[[noreturn]] inline void config_fail(std::string_view origin, const std::string& what) {
  throw ConfigError(std::string(origin) + ": " + what);
}

template <typename Config>
const ConfigKey<Config>* find_key(std::span<const ConfigKey<Config>> keys, std::string_view name) {
  for (const auto& key : keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

// Sets one field from a JSON value, checking its type.
template <typename Config>
void set_from_json(Config& config, const ConfigKey<Config>& key, const json::Value& v, std::string_view origin) {
  const std::string where(key.name);
  auto want = [&](const char* kind) {
    config_fail(origin, where + " must be " + kind + ", got " + std::string(v.kind_name()));
  };
  std::visit(
      [&](auto field) {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, std::int64_t Config::*>) {
          if (!v.is_integer()) want("an integer");
          config.*field = v.as_integer();
        } else if constexpr (std::is_same_v<F, std::optional<std::int64_t> Config::*>) {
          if (v.is_null()) config.*field = std::nullopt;
          else if (v.is_integer()) config.*field = v.as_integer();
          else want("an integer or null");
        } else if constexpr (std::is_same_v<F, double Config::*>) {
          if (!v.is_number()) want("a number");
          config.*field = v.as_double();
        } else if constexpr (std::is_same_v<F, std::optional<double> Config::*>) {
          if (v.is_null()) config.*field = std::nullopt;
          else if (v.is_number()) config.*field = v.as_double();
          else want("a number or null");
        } else if constexpr (std::is_same_v<F, bool Config::*>) {
          if (!v.is_bool()) want("a boolean");
          config.*field = v.as_bool();
        } else if constexpr (std::is_same_v<F, TokenIds Config::*>) {
          if (v.is_integer()) {
            config.*field = {v.as_integer()};
            return;
          }
          if (!v.is_array() || v.as_array().empty()) want("an integer or a non-empty list of integers");
          TokenIds ids;
          for (const json::Value& id : v.as_array()) {
            if (!id.is_integer()) want("an integer or a non-empty list of integers");
            ids.push_back(id.as_integer());
          }
          config.*field = std::move(ids);
        } else {
          if (!v.is_string()) want("a string");
          config.*field = v.as_string();
        }
      },
      key.field);
}

// Every key of the table found in a config.json object (keys HF writes that the table does not
// name are ignored: architectures, transformers_version, use_cache, ...).
template <typename Config>
void read_keys(Config& config, std::span<const ConfigKey<Config>> keys, const json::Value& doc, std::string_view origin) {
  for (const auto& [name, value] : doc.as_object()) {
    if (const auto* key = find_key(keys, name)) set_from_json(config, *key, value, origin);
  }
}

template <typename Config>
void write_keys(const Config& config, std::span<const ConfigKey<Config>> keys, json::Object& doc) {
  for (const auto& key : keys) {
    doc.emplace_back(std::string(key.name), std::visit(
                                                [&](auto field) -> json::Value {
                                                  using F = decltype(field);
                                                  if constexpr (std::is_same_v<F, std::optional<std::int64_t> Config::*> ||
                                                                std::is_same_v<F, std::optional<double> Config::*>) {
                                                    return (config.*field) ? json::Value(*(config.*field)) : json::Value(nullptr);
                                                  } else if constexpr (std::is_same_v<F, TokenIds Config::*>) {
                                                    const TokenIds& ids = config.*field;
                                                    if (ids.size() == 1) return json::Value(ids.front());
                                                    json::Array list;
                                                    for (const std::int64_t id : ids) list.emplace_back(id);
                                                    return json::Value(std::move(list));
                                                  } else {
                                                    return json::Value(config.*field);
                                                  }
                                                },
                                                key.field));
  }
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Sets one field from an override's text, the way transformers' update_from_string reads it
// ("null" clears an optional integer).
template <typename Config>
void set_from_text(Config& config, const ConfigKey<Config>& key, std::string_view text) {
  const std::string where = "--config_overrides: " + std::string(key.name) + "=" + std::string(text) + ": ";
  std::visit(
      [&](auto field) {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, TokenIds Config::*>) {
          std::int64_t value = 0;  // a list has commas, which separate overrides: one id here
          if (!parse_number(text, value)) throw ConfigError(where + "not an integer");
          config.*field = {value};
        } else if constexpr (std::is_same_v<F, std::int64_t Config::*> ||
                             std::is_same_v<F, std::optional<std::int64_t> Config::*>) {
          if constexpr (std::is_same_v<F, std::optional<std::int64_t> Config::*>) {
            if (text == "null" || text == "None") {
              config.*field = std::nullopt;
              return;
            }
          }
          std::int64_t value = 0;
          if (!parse_number(text, value)) throw ConfigError(where + "not an integer");
          config.*field = value;
        } else if constexpr (std::is_same_v<F, double Config::*> || std::is_same_v<F, std::optional<double> Config::*>) {
          if constexpr (std::is_same_v<F, std::optional<double> Config::*>) {
            if (text == "null" || text == "None") {
              config.*field = std::nullopt;
              return;
            }
          }
          double value = 0;
          if (!parse_number(text, value) || !std::isfinite(value)) throw ConfigError(where + "not a number");
          config.*field = value;
        } else if constexpr (std::is_same_v<F, bool Config::*>) {
          if (text == "true" || text == "True" || text == "1") config.*field = true;
          else if (text == "false" || text == "False" || text == "0") config.*field = false;
          else throw ConfigError(where + "not a boolean (true/false)");
        } else {
          config.*field = std::string(text);
        }
      },
      key.field);
}

// Applies "key=value,key=value" to a copy of config and returns it (the caller validates).
template <typename Config>
Config with_overrides(Config config, std::span<const ConfigKey<Config>> keys, std::string_view overrides,
                      std::string_view family) {
  std::size_t start = 0;
  while (start <= overrides.size()) {
    std::size_t comma = overrides.find(',', start);
    if (comma == std::string_view::npos) comma = overrides.size();
    const std::string_view item = overrides.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw ConfigError("--config_overrides: \"" + std::string(item) + "\" is not key=value");
    }
    const std::string_view name = item.substr(0, eq);
    const auto* key = find_key(keys, name);
    if (!key) {
      throw ConfigError("--config_overrides: unknown key \"" + std::string(name) + "\" for model_type " +
                        std::string(family));
    }
    set_from_text(config, *key, item.substr(eq + 1));
    start = comma + 1;
  }
  return config;
}

// --config_overrides for every family: the overridden copy is validated (the family's validate,
// found by argument-dependent lookup) before it replaces `config`, so a refused override changes
// nothing.
template <typename Config>
void apply_checked_overrides(Config& config, std::span<const ConfigKey<Config>> keys, std::string_view overrides) {
  Config updated = with_overrides<Config>(config, keys, overrides, Config::kModelType);
  validate(updated, "--config_overrides");
  config = updated;
}

// A size (layers, widths, heads, positions, vocabulary): at least 1, and at most 2^31-1, so that
// no product of two sizes overflows the int64 arithmetic that shapes tensors.
inline void require_size(std::string_view origin, std::string_view name, std::int64_t v) {
  if (v < 1) config_fail(origin, std::string(name) + " must be >= 1, got " + std::to_string(v));
  constexpr std::int64_t kMaxSize = (std::int64_t{1} << 31) - 1;
  if (v > kMaxSize) config_fail(origin, std::string(name) + " must be at most " + std::to_string(kMaxSize) + ", got " + std::to_string(v));
}

inline void require_probability(std::string_view origin, std::string_view name, double p) {
  if (!(p >= 0.0 && p < 1.0)) config_fail(origin, std::string(name) + " must be in [0, 1), got " + std::to_string(p));
}

inline void require_token_id(std::string_view origin, std::string_view name, std::optional<std::int64_t> id,
                             std::int64_t vocab_size) {
  if (id && (*id < 0 || *id >= vocab_size)) {
    config_fail(origin, std::string(name) + " " + std::to_string(*id) + " is outside the vocabulary (vocab_size " +
                            std::to_string(vocab_size) + ")");
  }
}

inline void require_token_ids(std::string_view origin, std::string_view name, const TokenIds& ids,
                              std::int64_t vocab_size) {
  if (ids.empty()) config_fail(origin, std::string(name) + " must name at least one token id");
  for (const std::int64_t id : ids) require_token_id(origin, name, id, vocab_size);
}

// "... imply 1.24e+08 parameters (0.46 GiB in fp32)".
std::string imply_parameters(double parameters);

}  // namespace llmrdzv::model::detail
