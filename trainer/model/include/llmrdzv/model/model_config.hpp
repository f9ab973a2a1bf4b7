// A model's config whatever its family (GPT-2, OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3,
// Gemma 2), read from and written to Hugging
// Face's config.json (the family comes from model_type), named presets, and run_clm.py's
// --config_overrides over the family's own keys. Torch-free.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "llmrdzv/model/config_error.hpp"
#include "llmrdzv/model/gemma2_config.hpp"
#include "llmrdzv/model/gemma3_config.hpp"
#include "llmrdzv/model/gpt2_config.hpp"
#include "llmrdzv/model/llama_config.hpp"
#include "llmrdzv/model/mistral_config.hpp"
#include "llmrdzv/model/opt_config.hpp"
#include "llmrdzv/model/phi3_config.hpp"
#include "llmrdzv/model/qwen3_config.hpp"

namespace llmrdzv::model {

class ModelConfig {
 public:
  ModelConfig() = default;  // GPT-2's defaults
  ModelConfig(Gpt2Config config) : family_(std::move(config)) {}
  ModelConfig(OptConfig config) : family_(std::move(config)) {}
  ModelConfig(LlamaConfig config) : family_(std::move(config)) {}
  ModelConfig(MistralConfig config) : family_(std::move(config)) {}
  ModelConfig(Qwen2Config config) : family_(std::move(config)) {}
  ModelConfig(Qwen3Config config) : family_(std::move(config)) {}
  ModelConfig(Phi3Config config) : family_(std::move(config)) {}
  ModelConfig(Gemma2Config config) : family_(std::move(config)) {}
  ModelConfig(Gemma3TextConfig config) : family_(std::move(config)) {}

  // "gpt2", "opt", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2" or "gemma3_text": config.json's model_type.
  std::string_view model_type() const;
  template <typename Family>
  bool is() const {
    return std::holds_alternative<Family>(family_);
  }
  // The family's own config; std::bad_variant_access for another family.
  template <typename Family>
  const Family& as() const {
    return std::get<Family>(family_);
  }
  template <typename Family>
  Family& as() {
    return std::get<Family>(family_);
  }
  template <typename Visitor>
  decltype(auto) visit(Visitor&& visitor) const {
    return std::visit(std::forward<Visitor>(visitor), family_);
  }
  template <typename Visitor>
  decltype(auto) visit(Visitor&& visitor) {
    return std::visit(std::forward<Visitor>(visitor), family_);
  }

  std::int64_t vocab_size() const;
  std::int64_t max_positions() const;  // the longest sequence the model takes
  std::int64_t num_layers() const;
  // config.json's eos_token_id: one id, or several where the model ends text more than one way.
  const TokenIds& eos_token_ids() const;
  bool tie_word_embeddings() const;
  // A fresh model sized to its tokenizer (as run_clm resizes embeddings to len(tokenizer)): the
  // vocabulary, the tokenizer's EOS, and its BOS where it prepends one (Llama's <s>, OPT's </s>),
  // else the EOS (GPT-2's convention); a pad id outside the new vocabulary is cleared.
  void fit_to_tokenizer(std::int64_t vocab_size, std::int64_t eos_id, std::optional<std::int64_t> bos_id);

 private:
  std::variant<Gpt2Config, OptConfig, LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Phi3Config,
               Gemma2Config, Gemma3TextConfig>
      family_;
};

void validate(const ModelConfig& config, std::string_view origin);
double parameter_count(const ModelConfig& config);
std::string describe_size(const ModelConfig& config);
// Over the family's keys (an unknown key names the family); the config is unchanged on error.
void apply_overrides(ModelConfig& config, std::string_view overrides);

// Parses config.json text; model_type picks the family ("gpt2" when absent, as old GPT-2
// checkpoints have none; any other type is refused naming it). Unknown keys are ignored (HF
// writes many), known keys must have the right type, and the result is validated.
ModelConfig config_from_json(std::string_view text, std::string_view origin);
// Reads <path> (a config.json file, or a directory holding one).
ModelConfig load_config(const std::filesystem::path& path);
// config.json text that transformers' AutoConfig / AutoModelForCausalLM read as this model.
std::string config_to_json(const ModelConfig& config);
// Writes dir/config.json atomically.
void save_config(const ModelConfig& config, const std::filesystem::path& dir);

// Named shapes with HF's sizes: gpt2, gpt2-medium, gpt2-large, gpt2-xl; opt-125m, opt-350m,
// opt-1.3b, opt-2.7b, opt-6.7b; smollm-135m, tinyllama-1.1b, llama-2-7b, llama-2-13b (Llama);
// mistral-7b; qwen2.5-0.5b, qwen2.5-7b; qwen3-0.6b, qwen3-8b; phi-3-mini; gemma-2-2b.
// Throws ConfigError listing them otherwise.
ModelConfig preset(std::string_view name);

}  // namespace llmrdzv::model
