// `--deepspeed`: a DeepSpeed config, as the HF Trainer scripts this trainer replaces pass it, read
// and mapped onto the trainer's options with HF Trainer's rules (its HfTrainerDeepSpeedConfig):
// "auto" leaves the option as it is, an explicit value sets it. Every key is either mapped, taken
// as tuning that has no effect here (named in the run log), or refused by name: a key this reader
// does not know is never ignored. Torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

// One option the config sets: its name in the option table and its value as a command line would
// give it, from the config key `key` (for messages: "optimizer.params.lr").
struct DeepSpeedSetting {
  std::string option;
  std::string value;
  std::string key;
};

struct DeepSpeedMapping {
  std::string origin;  // the file's path, or "the --deepspeed JSON" when it was given inline
  std::vector<DeepSpeedSetting> settings;  // in the config's order; "auto" values are left out
  DeepSpeedSchedule schedule;              // from a "scheduler" block (type none without one)
  std::optional<LossScaling> loss_scaling;  // from an "fp16" block
  DeepSpeedChecks checks;
  std::vector<std::string> notes;  // "zero_optimization.overlap_comm: no effect here (...)"
};

// `file_or_json`: a path, or the JSON itself when it starts with '{' (HF accepts a dict). Throws
// UsageError naming the file, the key and the problem: unreadable or malformed JSON, a value of
// the wrong kind, a setting this trainer does not have (offload_param without stage 3, nvme, an
// optimizer other than Adam/AdamW, another scheduler), or an unknown key.
DeepSpeedMapping read_deepspeed_config(const std::string& file_or_json);

}  // namespace llmrdzv::train
