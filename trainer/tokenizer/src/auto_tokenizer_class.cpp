// AutoTokenizer's choice of class (auto_tokenizer_class.hpp), as transformers 5.23's
// AutoTokenizer.from_pretrained makes it for the model types this trainer trains.
#include "auto_tokenizer_class.hpp"

#include <map>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {
namespace {

// TOKENIZER_MAPPING_NAMES for these model types ("llama" has none); "backend" is
// TokenizersBackend, the tokenizer.json as it is (Mistral's without the mistral_common package).
const std::map<std::string, std::string>& registered_classes() {
  static const std::map<std::string, std::string> classes = {
      {"gpt2", "GPT2Tokenizer"},  {"opt", "GPT2Tokenizer"},   {"mistral", "backend"},
      {"qwen2", "Qwen2Tokenizer"}, {"qwen3", "Qwen2Tokenizer"}, {"phi3", "backend"},
      {"gemma2", "GemmaTokenizer"}, {"gemma3_text", "GemmaTokenizer"}, {"llama", ""}};
  return classes;
}

// MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS among them: their registered class wins.
bool hub_class_incorrect(const std::string& model_type) { return model_type == "qwen2" || model_type == "phi3"; }

bool is_backend(const std::string& name) {
  return name == "backend" || name == "TokenizersBackend" || name == "PreTrainedTokenizer" || name == "PythonBackend";
}

std::string without_fast(std::string name) {
  if (name.ends_with("Fast")) name.resize(name.size() - 4);
  return name;
}

}  // namespace

AutoTokenizerClass auto_tokenizer_class(const std::optional<std::filesystem::path>& dir,
                                        const std::optional<std::string>& hub_class_in, bool byte_level) {
  std::optional<std::string> hub = hub_class_in ? std::optional(without_fast(*hub_class_in)) : std::nullopt;
  const std::filesystem::path base = dir.value_or(std::filesystem::path());
  std::string hub_named = hub ? (base / "tokenizer_config.json").string() + ": tokenizer_class " + *hub_class_in : "";
  std::string model_type;
  const std::filesystem::path config_path = base / "config.json";
  std::error_code ec;
  if (dir && std::filesystem::is_regular_file(config_path, ec)) {
    json::Value config;
    try {
      config = json::parse(read_whole_file(config_path));
    } catch (const json::ParseError& e) {
      throw TokenizerError(config_path.string() + ": " + e.what() + " (AutoTokenizer reads its model_type)");
    }
    const json::Value* type = config.is_object() ? config.find("model_type") : nullptr;
    if (type && type->is_string()) model_type = type->as_string();
    const json::Value* cls = config.is_object() ? config.find("tokenizer_class") : nullptr;
    if (!hub && cls && cls->is_string()) {
      hub = without_fast(cls->as_string());
      hub_named = config_path.string() + ": tokenizer_class " + cls->as_string();
    }
  }
  const auto as_is = [](std::string why) { return AutoTokenizerClass{std::nullopt, std::move(why)}; };
  const auto named = [](const std::string& name, std::string why) {
    return is_backend(name) ? AutoTokenizerClass{std::nullopt, std::move(why)} : AutoTokenizerClass{name, std::move(why)};
  };
  const auto found = registered_classes().find(model_type);
  const std::string registered = found == registered_classes().end() ? std::string() : found->second;
  const std::string from_type = config_path.string() + ": model_type " + model_type;
  // A LlamaTokenizer over a byte-level file is the file as it is (LlamaTokenizer hardcodes Metaspace).
  if (hub == "LlamaTokenizer" && byte_level && !hub_class_incorrect(model_type)) {
    return as_is(hub_named + " over a byte-level tokenizer.json");
  }
  if (hub && !registered.empty() && registered != *hub) {
    if (!is_backend(registered)) {
      return hub_class_incorrect(model_type) ? named(registered, from_type + " (its hub class is overridden)")
                                             : named(*hub, hub_named);
    }
    return as_is(from_type + " (tokenizer.json as it is)");
  }
  if (!hub && !registered.empty()) return named(registered, from_type);
  if (!hub) return as_is("no tokenizer_class");
  return named(*hub, hub_named);
}

}  // namespace llmrdzv::tokenizer
