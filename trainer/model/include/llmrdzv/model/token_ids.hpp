// A config.json token id that transformers lets be one integer or a list (Llama 3.1's
// eos_token_id: <|end_of_text|>, <|eom_id|>, <|eot_id|>). Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace llmrdzv::model {

// Never empty once validated; written back as an integer when it holds one id.
using TokenIds = std::vector<std::int64_t>;

}  // namespace llmrdzv::model
