// Each family's recipe: how its config.json maps onto decoder_recipe.hpp's choices and how its
// weights are named. One function per family file (gpt2.cpp, opt.cpp, llama.cpp, mistral.cpp, qwen2.cpp,
// qwen3.cpp, phi3.cpp, gemma2.cpp, gemma3.cpp); make_causal_lm builds a DecoderLm from the config's.
#pragma once

#include "llmrdzv/model/decoder_recipe.hpp"
#include "llmrdzv/model/model_config.hpp"

namespace llmrdzv::model::detail {

DecoderRecipe decoder_recipe(const Gpt2Config& config);
DecoderRecipe decoder_recipe(const OptConfig& config);
DecoderRecipe decoder_recipe(const LlamaConfig& config);
DecoderRecipe decoder_recipe(const MistralConfig& config);
DecoderRecipe decoder_recipe(const Qwen2Config& config);
DecoderRecipe decoder_recipe(const Qwen3Config& config);
DecoderRecipe decoder_recipe(const Phi3Config& config);
DecoderRecipe decoder_recipe(const Gemma2Config& config);
DecoderRecipe decoder_recipe(const Gemma3TextConfig& config);

}  // namespace llmrdzv::model::detail
