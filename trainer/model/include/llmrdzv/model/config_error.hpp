// What every model family's config shares: the one error type (config.json, --config_overrides,
// presets) and the size limit.
#pragma once

#include <stdexcept>

namespace llmrdzv::model {

// Any invalid config: the message names the source (file or "--config_overrides") and the key.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A trillion parameters (4 TB in fp32): more than any machine this trainer runs on holds.
inline constexpr double kMaxParameters = 1e12;

}  // namespace llmrdzv::model
