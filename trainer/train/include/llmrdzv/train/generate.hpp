// `trainer generate`: sample a continuation of a prompt from a saved HF model directory with
// temperature and top-k, stopping at max_new_tokens or the end-of-text token.
#pragma once

#include <string>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

// The prompt followed by the generated text (decoded bytes). Throws on a bad model directory.
std::string generate_text(const GenerateOptions& options);

}  // namespace llmrdzv::train
