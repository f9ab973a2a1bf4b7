// `trainer generate`: sample a continuation of a prompt from a saved HF model directory with
// temperature and top-k, stopping at max_new_tokens or the end-of-text token.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

// The prompt followed by the generated text (decoded bytes). Throws on a bad model directory.
std::string generate_text(const GenerateOptions& options);

// The next token from one position's logits [vocab]: the argmax at temperature 0, else a draw
// from softmax(logits / temperature) restricted to the top_k likeliest ids (0: all of them).
std::int64_t sample_next_token(const at::Tensor& logits, double temperature, std::int64_t top_k,
                               at::Generator& generator);

}  // namespace llmrdzv::train
