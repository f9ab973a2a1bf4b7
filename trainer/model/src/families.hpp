// What model_config.cpp needs from each family's config file: read the family's keys from a
// config.json object, write them, and its named presets.
#pragma once

#include <optional>
#include <string_view>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/model/model_config.hpp"

namespace llmrdzv::model::detail {

Gpt2Config gpt2_from_json(const json::Value& doc, std::string_view origin);
OptConfig opt_from_json(const json::Value& doc, std::string_view origin);
LlamaConfig llama_from_json(const json::Value& doc, std::string_view origin);
MistralConfig mistral_from_json(const json::Value& doc, std::string_view origin);
Qwen2Config qwen2_from_json(const json::Value& doc, std::string_view origin);
Qwen3Config qwen3_from_json(const json::Value& doc, std::string_view origin);
Phi3Config phi3_from_json(const json::Value& doc, std::string_view origin);
Gemma2Config gemma2_from_json(const json::Value& doc, std::string_view origin);
Gemma3TextConfig gemma3_text_from_json(const json::Value& doc, std::string_view origin);

// architectures, model_type and the family's keys.
void write_json(const Gpt2Config& config, json::Object& doc);
void write_json(const OptConfig& config, json::Object& doc);
void write_json(const LlamaConfig& config, json::Object& doc);
void write_json(const MistralConfig& config, json::Object& doc);
void write_json(const Qwen2Config& config, json::Object& doc);
void write_json(const Qwen3Config& config, json::Object& doc);
void write_json(const Phi3Config& config, json::Object& doc);
void write_json(const Gemma2Config& config, json::Object& doc);
void write_json(const Gemma3TextConfig& config, json::Object& doc);

std::optional<Gpt2Config> gpt2_preset(std::string_view name);
std::optional<OptConfig> opt_preset(std::string_view name);
std::optional<LlamaConfig> llama_preset(std::string_view name);
std::optional<MistralConfig> mistral_preset(std::string_view name);
std::optional<Qwen2Config> qwen2_preset(std::string_view name);
std::optional<Qwen3Config> qwen3_preset(std::string_view name);
std::optional<Phi3Config> phi3_preset(std::string_view name);
std::optional<Gemma2Config> gemma2_preset(std::string_view name);
std::optional<Gemma3TextConfig> gemma3_text_preset(std::string_view name);

}  // namespace llmrdzv::model::detail
