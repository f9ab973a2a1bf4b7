// The one place that knows how a checkpoint directory is named: checkpoint-<step>, as Hugging Face's
// Trainer names them. Torch-free so the CLI side and the tests can use it without LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmrdzv::io {

// "checkpoint-<step>" for a step >= 0.
std::string checkpoint_dir_name(std::int64_t step);

// The step of a directory named checkpoint-<digits>, as HF's get_last_checkpoint reads it
// (regex ^checkpoint-(\d+)$, then int()): ASCII digits only, no sign, leading zeros allowed
// ("checkpoint-01" is step 1). nullopt for any other name and for steps beyond int64.
std::optional<std::int64_t> parse_checkpoint_step(std::string_view dir_name);

}  // namespace llmrdzv::io
