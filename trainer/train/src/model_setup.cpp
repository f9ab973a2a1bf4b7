// Tokenizer and model selection for model_setup.hpp.
#include "model_setup.hpp"

#include <torch/nn/modules/normalization.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>

#include "llmrdzv/hub/hub_cache.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/model/decoder_lm.hpp"

namespace llmrdzv::train {

namespace {

std::string kind_name(tokenizer::Tokenizer::Kind kind) {
  switch (kind) {
    case tokenizer::Tokenizer::Kind::bytes: return "the byte-level tokenizer";
    case tokenizer::Tokenizer::Kind::gpt2_bpe: return "GPT-2 byte-level BPE";
    case tokenizer::Tokenizer::Kind::llama3_bpe: return "Llama-3 byte-level BPE";
    case tokenizer::Tokenizer::Kind::qwen2_bpe: return "Qwen2 byte-level BPE (NFC)";
    case tokenizer::Tokenizer::Kind::sentencepiece_bpe: return "SentencePiece-style BPE (Llama 2)";
  }
  return "an unknown tokenizer";
}

// A preset of model_config.hpp (gpt2-medium, opt-125m, ...).
bool is_preset(const std::string& name) {
  try {
    model::preset(name);
    return true;
  } catch (const model::ConfigError&) {
    return false;
  }
}

}  // namespace

std::string locate(const std::string& name, std::string_view option, NamedThing thing, const HubLookup& hub,
                   std::vector<std::string>& log) {
  static const hub::RequiredFile kConfig{"config.json"};
  static const hub::RequiredFile kWeights{"model.safetensors", "model.safetensors.index.json"};
  static const hub::RequiredFile kModelFiles[] = {kConfig, kWeights};
  std::span<const hub::RequiredFile> required;
  if (thing == NamedThing::model) required = kModelFiles;
  if (thing == NamedThing::config) required = std::span(&kConfig, 1);
  std::error_code ec;
  if (name.empty() || (thing == NamedThing::config && std::filesystem::exists(name, ec))) return name;
  const hub::CacheDir cache = hub::model_cache_dir(hub.cache_dir);
  try {
    hub::Resolved resolved = hub::resolve(name, hub.revision, cache, option, required);
    if (resolved.from_cache) log.push_back(std::string(option) + " " + name + ": " + resolved.description);
    return resolved.dir.string();
  } catch (const hub::HubError& e) {
    // --config_name gpt2-medium without that model in the cache: the preset of that name.
    if (thing == NamedThing::config) {
      if (is_preset(name)) return name;
      throw hub::HubError(std::string(e.what()) + "; nor is it a preset name (trainer --help lists them)");
    }
    throw;
  }
}

ChosenTokenizer load_tokenizer(const std::string& tokenizer_name, const std::string& model_dir) {
  using tokenizer::Tokenizer;
  const bool named = !tokenizer_name.empty();
  if (!named && model_dir.empty()) {
    return {Tokenizer::bytes(), "the byte-level tokenizer (256 bytes + EOS): no --tokenizer_name for a fresh model"};
  }
  const std::string& dir = named ? tokenizer_name : model_dir;
  const std::string what = named ? "--tokenizer_name '" + dir + "'" : "the model directory '" + dir + "'";
  if (std::error_code ec; !std::filesystem::is_directory(dir, ec)) {
    throw std::invalid_argument(what + (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist"));
  }
  if (const std::string files = Tokenizer::directory_tokenizer_files(dir); !files.empty()) {
    Tokenizer tokenizer = Tokenizer::from_directory(dir);
    return {tokenizer, kind_name(tokenizer.kind()) + " from " + what + " (" + files + ")"};
  }
  const std::vector<std::string> others = Tokenizer::unreadable_tokenizer_files(dir);
  std::string files;
  for (const auto& name : others) files += (files.empty() ? "" : ", ") + name;
  if (!others.empty()) {
    throw std::invalid_argument(what + " carries its tokenizer as " + files +
                                " without the vocab.json + merges.txt pair or the tokenizer.json this trainer reads "
                                "(byte-level BPE as GPT-2, OPT and Llama 3 ship it, or Llama 2's SentencePiece-style BPE); "
                                "refusing rather than tokenising differently: pass "
                                "--tokenizer_name DIR holding the same tokenizer in one of those forms");
  }
  throw std::invalid_argument(what + " has no tokenizer (no vocab.json and merges.txt, no tokenizer.json)" +
                              (named ? std::string() : ": pass --tokenizer_name DIR with the tokenizer the model was trained with"));
}

namespace {

// --model_type names the family of `config`, taken from `origin` (a loaded model or --config_name).
void require_model_type(const ModelSource& source, const model::ModelConfig& config, const std::string& origin) {
  if (!source.model_type.empty() && source.model_type != config.model_type()) {
    throw std::invalid_argument("--model_type " + source.model_type + " disagrees with the model_type \"" +
                                std::string(config.model_type()) + "\" of " + origin);
  }
}

model::ModelConfig fresh_config(const ModelSource& source, const tokenizer::Tokenizer& tokenizer) {
  model::ModelConfig config;
  if (!source.config_name.empty()) {
    config = std::filesystem::exists(source.config_name) ? model::load_config(source.config_name)
                                                         : model::preset(source.config_name);
    require_model_type(source, config, "--config_name " + source.config_name);
  } else if (!source.model_type.empty()) {
    // run_clm's CONFIG_MAPPING[model_type](): the family's config class defaults, which its config
    // struct mirrors; a config.json naming only the type reads as exactly those.
    config = model::config_from_json(json::write(json::Object{{"model_type", source.model_type}}),
                                     "--model_type " + source.model_type);
  }
  const auto bos = tokenizer.bos_id();
  config.fit_to_tokenizer(static_cast<std::int64_t>(tokenizer.vocab_size()), tokenizer.eos_id(),
                          bos ? std::optional<std::int64_t>(*bos) : std::nullopt);
  if (!source.config_overrides.empty()) model::apply_overrides(config, source.config_overrides);
  model::validate(config, "the model config");
  return config;
}

void require_covers_vocab(const model::ModelConfig& config, const tokenizer::Tokenizer& tokenizer,
                          const std::string& origin) {
  const auto vocab = static_cast<std::int64_t>(tokenizer.vocab_size());
  if (config.vocab_size() < vocab) {
    throw std::invalid_argument("the tokenizer has " + std::to_string(vocab) + " ids but " + origin +
                                " has vocab_size " + std::to_string(config.vocab_size()));
  }
}

// A model is made or loaded in host memory first: one whose fp32 weights alone exceed it is
// refused here, naming its size, rather than failing deep in the allocator or being OOM-killed.
void require_fits_in_memory(const model::ModelConfig& config, const std::string& origin) {
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES));
  const double memory = pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (pages > 0 && model::parameter_count(config) * 4 > memory) {
    char have[64];
    std::snprintf(have, sizeof have, "%.3g GiB", memory / (1024.0 * 1024.0 * 1024.0));
    throw std::invalid_argument(origin + ": " + model::describe_size(config) + ", more than this machine's " + have +
                                " of memory");
  }
}

}  // namespace

model::ModelConfig model_config_of(const ModelSource& source, const tokenizer::Tokenizer& tokenizer) {
  if (source.model_name_or_path.empty()) {
    model::ModelConfig config = fresh_config(source, tokenizer);
    require_covers_vocab(config, tokenizer, "the model config");
    return config;
  }
  const std::string origin = "the model in '" + source.model_name_or_path + "'";
  model::ModelConfig config = model::load_config(std::filesystem::path(source.model_name_or_path) / "config.json");
  require_model_type(source, config, origin);
  require_covers_vocab(config, tokenizer, origin);
  return config;
}

model::CausalLm build_model(const ModelSource& source, const model::ModelConfig& config) {
  if (!source.model_name_or_path.empty()) return load_model(source.model_name_or_path, source.low_cpu_mem_usage);
  require_fits_in_memory(config, "the model config");
  return model::make_causal_lm(config);
}

model::WeightInitializer read_weights(std::shared_ptr<const io::HfWeights> weights) {
  return [weights = std::move(weights)](const std::string& name, const at::Tensor& values) { weights->read(name, values); };
}

DeferredModel build_deferred_model(const ModelSource& source, const model::ModelConfig& config) {
  DeferredModel built{model::make_causal_lm(config, model::WeightInit::deferred), {}, source.model_name_or_path.empty()};
  built.values = built.drawn ? built.model->weight_initializer()
                             : read_weights(std::make_shared<const io::HfWeights>(
                                   built.model, io::hf_weights_path(source.model_name_or_path)));
  return built;
}

model::CausalLm load_model(const std::string& dir, bool low_cpu_mem_usage) {
  require_fits_in_memory(model::load_config(dir), "the model in '" + dir + "'");
  return io::load_hf_model(dir, {.low_cpu_mem_usage = low_cpu_mem_usage});
}

std::vector<engine::NamedParameter> trainable_parameters(model::CausalLm& model) {
  std::set<const void*> layer_norm;
  for (const auto& module : model->modules()) {
    if (!module->as<torch::nn::LayerNorm>() && !module->as<model::RmsNorm>()) continue;
    for (const auto& p : module->parameters()) layer_norm.insert(p.unsafeGetTensorImpl());
  }
  const std::map<const void*, int> units = model->parameter_units();
  std::vector<engine::NamedParameter> parameters;
  for (const auto& item : model->named_parameters()) {
    const bool bias = item.key().ends_with("bias");
    const void* impl = item.value().unsafeGetTensorImpl();
    parameters.push_back({item.key(), item.value(), !bias && !layer_norm.contains(impl), units.at(impl)});
  }
  return parameters;
}

}  // namespace llmrdzv::train
