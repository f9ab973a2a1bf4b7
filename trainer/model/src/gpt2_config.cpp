// GPT2Config <-> config.json and run_clm.py's --config_overrides, from one table of keys so that
// reading, writing and overriding cannot disagree about names or types.
#include "llmrdzv/model/gpt2_config.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <variant>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/json.hpp"

namespace llmrdzv::model {
namespace {

using IntField = std::int64_t Gpt2Config::*;
using OptionalIntField = std::optional<std::int64_t> Gpt2Config::*;
using RealField = double Gpt2Config::*;
using BoolField = bool Gpt2Config::*;
using StringField = std::string Gpt2Config::*;
using Field = std::variant<IntField, OptionalIntField, RealField, BoolField, StringField>;

struct Key {
  std::string_view name;
  Field field;
};

// In config.json's (alphabetical) order.
const Key kKeys[] = {
    {"activation_function", &Gpt2Config::activation_function},
    {"attn_pdrop", &Gpt2Config::attn_pdrop},
    {"bos_token_id", &Gpt2Config::bos_token_id},
    {"embd_pdrop", &Gpt2Config::embd_pdrop},
    {"eos_token_id", &Gpt2Config::eos_token_id},
    {"initializer_range", &Gpt2Config::initializer_range},
    {"layer_norm_epsilon", &Gpt2Config::layer_norm_epsilon},
    {"n_embd", &Gpt2Config::n_embd},
    {"n_head", &Gpt2Config::n_head},
    {"n_inner", &Gpt2Config::n_inner},
    {"n_layer", &Gpt2Config::n_layer},
    {"n_positions", &Gpt2Config::n_positions},
    {"resid_pdrop", &Gpt2Config::resid_pdrop},
    {"scale_attn_by_inverse_layer_idx", &Gpt2Config::scale_attn_by_inverse_layer_idx},
    {"scale_attn_weights", &Gpt2Config::scale_attn_weights},
    {"tie_word_embeddings", &Gpt2Config::tie_word_embeddings},
    {"vocab_size", &Gpt2Config::vocab_size},
};

const Key* find_key(std::string_view name) {
  for (const Key& k : kKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

[[noreturn]] void fail(std::string_view origin, const std::string& what) {
  throw ConfigError(std::string(origin) + ": " + what);
}

// Sets one field from a JSON value, checking its type.
void set_from_json(Gpt2Config& config, const Key& key, const json::Value& v, std::string_view origin) {
  const std::string where(key.name);
  auto want = [&](const char* kind) { fail(origin, where + " must be " + kind + ", got " + std::string(v.kind_name())); };
  std::visit(
      [&](auto field) {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, IntField>) {
          if (!v.is_integer()) want("an integer");
          config.*field = v.as_integer();
        } else if constexpr (std::is_same_v<F, OptionalIntField>) {
          if (v.is_null()) config.*field = std::nullopt;
          else if (v.is_integer()) config.*field = v.as_integer();
          else want("an integer or null");
        } else if constexpr (std::is_same_v<F, RealField>) {
          if (!v.is_number()) want("a number");
          config.*field = v.as_double();
        } else if constexpr (std::is_same_v<F, BoolField>) {
          if (!v.is_bool()) want("a boolean");
          config.*field = v.as_bool();
        } else {
          if (!v.is_string()) want("a string");
          config.*field = v.as_string();
        }
      },
      key.field);
}

json::Value to_json(const Gpt2Config& config, const Key& key) {
  return std::visit(
      [&](auto field) -> json::Value {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, OptionalIntField>) {
          return (config.*field) ? json::Value(*(config.*field)) : json::Value(nullptr);
        } else {
          return json::Value(config.*field);
        }
      },
      key.field);
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Sets one field from an override's text, the way transformers' update_from_string reads it.
void set_from_text(Gpt2Config& config, const Key& key, std::string_view text) {
  const std::string where = "--config_overrides: " + std::string(key.name) + "=" + std::string(text) + ": ";
  std::visit(
      [&](auto field) {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, IntField> || std::is_same_v<F, OptionalIntField>) {
          std::int64_t value = 0;
          if (!parse_number(text, value)) throw ConfigError(where + "not an integer");
          config.*field = value;
        } else if constexpr (std::is_same_v<F, RealField>) {
          double value = 0;
          if (!parse_number(text, value) || !std::isfinite(value)) throw ConfigError(where + "not a number");
          config.*field = value;
        } else if constexpr (std::is_same_v<F, BoolField>) {
          if (text == "true" || text == "True" || text == "1") config.*field = true;
          else if (text == "false" || text == "False" || text == "0") config.*field = false;
          else throw ConfigError(where + "not a boolean (true/false)");
        } else {
          config.*field = std::string(text);
        }
      },
      key.field);
}

bool known_activation(std::string_view name) {
  return name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu" || name == "relu" || name == "silu";
}

}  // namespace

void validate(const Gpt2Config& c, std::string_view origin) {
  auto positive = [&](std::string_view name, std::int64_t v) {
    if (v < 1) fail(origin, std::string(name) + " must be >= 1, got " + std::to_string(v));
  };
  positive("vocab_size", c.vocab_size);
  positive("n_positions", c.n_positions);
  positive("n_embd", c.n_embd);
  positive("n_layer", c.n_layer);
  positive("n_head", c.n_head);
  if (c.n_inner) positive("n_inner", *c.n_inner);
  if (c.n_embd % c.n_head != 0) {
    fail(origin, "n_embd (" + std::to_string(c.n_embd) + ") must be divisible by n_head (" + std::to_string(c.n_head) + ")");
  }
  for (auto [name, p] : {std::pair{"resid_pdrop", c.resid_pdrop}, std::pair{"embd_pdrop", c.embd_pdrop},
                         std::pair{"attn_pdrop", c.attn_pdrop}}) {
    if (!(p >= 0.0 && p < 1.0)) fail(origin, std::string(name) + " must be in [0, 1), got " + std::to_string(p));
  }
  if (!(c.layer_norm_epsilon > 0.0)) fail(origin, "layer_norm_epsilon must be > 0");
  if (!(c.initializer_range >= 0.0)) fail(origin, "initializer_range must be >= 0");
  if (!known_activation(c.activation_function)) {
    fail(origin, "activation_function \"" + c.activation_function +
                     "\" is not one of gelu_new, gelu_pytorch_tanh, gelu, relu, silu");
  }
  for (auto [name, id] : {std::pair{"bos_token_id", c.bos_token_id}, std::pair{"eos_token_id", c.eos_token_id}}) {
    if (id < 0 || id >= c.vocab_size) {
      fail(origin, std::string(name) + " " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                       std::to_string(c.vocab_size) + ")");
    }
  }
  if (parameter_count(c) > kMaxParameters) fail(origin, describe_size(c) + ", more than any machine holds");
}

double parameter_count(const Gpt2Config& c) {
  const double e = static_cast<double>(c.n_embd), inner = static_cast<double>(c.inner_dim());
  const double per_layer = 2 * e + (e * 3 * e + 3 * e) + (e * e + e) + 2 * e + (e * inner + inner) + (inner * e + e);
  const double head = c.tie_word_embeddings ? 0 : static_cast<double>(c.vocab_size) * e;
  return static_cast<double>(c.vocab_size) * e + static_cast<double>(c.n_positions) * e +
         static_cast<double>(c.n_layer) * per_layer + 2 * e + head;
}

std::string describe_size(const Gpt2Config& c) {
  const double parameters = parameter_count(c);
  char size[96];
  std::snprintf(size, sizeof size, " imply %.3g parameters (%.3g GiB in fp32)", parameters,
                parameters * 4 / (1024.0 * 1024.0 * 1024.0));
  return "n_layer=" + std::to_string(c.n_layer) + ", n_embd=" + std::to_string(c.n_embd) +
         ", n_inner=" + std::to_string(c.inner_dim()) + ", vocab_size=" + std::to_string(c.vocab_size) +
         ", n_positions=" + std::to_string(c.n_positions) + size;
}

Gpt2Config config_from_json(std::string_view text, std::string_view origin) {
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const json::ParseError& e) {
    fail(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail(origin, "expected a JSON object, got " + std::string(doc.kind_name()));
  if (const json::Value* type = doc.find("model_type")) {
    if (!type->is_string() || type->as_string() != "gpt2") {
      fail(origin, "model_type must be \"gpt2\" (the only family supported)");
    }
  }
  if (const json::Value* cross = doc.find("add_cross_attention"); cross && cross->is_bool() && cross->as_bool()) {
    fail(origin, "add_cross_attention=true is not supported");
  }
  Gpt2Config config;
  for (const auto& [name, value] : doc.as_object()) {
    if (const Key* key = find_key(name)) set_from_json(config, *key, value, origin);
  }
  validate(config, origin);
  return config;
}

Gpt2Config load_config(const std::filesystem::path& path) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::string text;
  try {
    text = io::read_file(file);
  } catch (const io::IoError& e) {
    throw ConfigError(e.what());
  }
  return config_from_json(text, file.string());
}

std::string config_to_json(const Gpt2Config& config) {
  json::Object doc;
  doc.emplace_back("architectures", json::Array{json::Value("GPT2LMHeadModel")});
  doc.emplace_back("model_type", json::Value("gpt2"));
  for (const Key& key : kKeys) doc.emplace_back(std::string(key.name), to_json(config, key));
  return json::write(json::Value(std::move(doc)), 2) + "\n";
}

void save_config(const Gpt2Config& config, const std::filesystem::path& dir) {
  io::atomic_write(dir / "config.json", config_to_json(config));
}

void apply_overrides(Gpt2Config& config, std::string_view overrides) {
  Gpt2Config updated = config;
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
    const Key* key = find_key(name);
    if (!key) throw ConfigError("--config_overrides: unknown key \"" + std::string(name) + "\"");
    set_from_text(updated, *key, item.substr(eq + 1));
    start = comma + 1;
  }
  validate(updated, "--config_overrides");
  config = updated;
}

Gpt2Config preset(std::string_view name) {
  struct Shape {
    std::string_view name;
    std::int64_t n_layer, n_head, n_embd;
  };
  static constexpr Shape kShapes[] = {
      {"gpt2", 12, 12, 768}, {"gpt2-medium", 24, 16, 1024}, {"gpt2-large", 36, 20, 1280}, {"gpt2-xl", 48, 25, 1600}};
  for (const Shape& s : kShapes) {
    if (s.name == name) {
      Gpt2Config c;
      c.n_layer = s.n_layer;
      c.n_head = s.n_head;
      c.n_embd = s.n_embd;
      return c;
    }
  }
  throw ConfigError("unknown model preset \"" + std::string(name) + "\" (gpt2, gpt2-medium, gpt2-large, gpt2-xl)");
}

}  // namespace llmrdzv::model
